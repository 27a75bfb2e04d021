import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';

/**
 * The fake serves Modal's published protos (protos/, vendored from modal-labs/modal-client), while
 * the SDK we ship (modal 0.11.1) was generated from newer ones. This compares, for every message the
 * fake reads or writes, the field numbers the SDK's generated encoders use with the vendored protos:
 * a number that means another field, or an SDK field the protos lack (outside the list below of
 * fields the fake knowingly ignores), fails here instead of silently losing data on the wire.
 */
const messages = [
  'modal.client.AuthTokenGetResponse',
  'modal.client.EnvironmentGetOrCreateRequest',
  'modal.client.EnvironmentGetOrCreateResponse',
  'modal.client.EnvironmentMetadata',
  'modal.client.AppGetOrCreateRequest',
  'modal.client.AppGetOrCreateResponse',
  'modal.client.ImageGetOrCreateRequest',
  'modal.client.ImageGetOrCreateResponse',
  'modal.client.Image',
  'modal.client.BaseImage',
  'modal.client.ImageJoinStreamingRequest',
  'modal.client.ImageJoinStreamingResponse',
  'modal.client.ImageFromIdRequest',
  'modal.client.ImageFromIdResponse',
  'modal.client.SandboxCreateV2Request',
  'modal.client.SandboxCreateV2Response',
  'modal.client.Sandbox',
  'modal.client.NetworkAccess',
  'modal.client.Resources',
  'modal.client.SandboxTag',
  'modal.client.SecretSource',
  'modal.client.StringMap',
  'modal.client.SandboxGetTaskIdRequest',
  'modal.client.SandboxGetTaskIdResponse',
  'modal.client.SandboxGetCommandRouterAccessRequest',
  'modal.client.SandboxGetCommandRouterAccessResponse',
  'modal.client.CommandRouterAccess',
  'modal.client.SandboxWaitRequest',
  'modal.client.SandboxWaitResponse',
  'modal.client.SandboxHandleMetadata',
  'modal.client.GenericResult',
  'modal.client.SandboxTerminateRequest',
  'modal.client.SandboxListRequest',
  'modal.client.SandboxListResponse',
  'modal.client.SandboxInfo',
  'modal.client.SandboxTagsGetRequest',
  'modal.client.SandboxTagsGetResponse',
  'modal.client.SandboxGetExitSnapshotRequest',
  'modal.client.SandboxGetExitSnapshotResponse',
  'modal.client.TaskLogs',
  'modal.client.ImageMetadata',
  'modal.task_command_router.TaskExecStartRequest',
  'modal.task_command_router.TaskExecStdioReadRequest',
  'modal.task_command_router.TaskExecStdioReadResponse',
  'modal.task_command_router.TaskExecStdinWriteRequest',
  'modal.task_command_router.TaskExecWaitRequest',
  'modal.task_command_router.TaskExecWaitResponse',
  'modal.task_command_router.TaskExecPollRequest',
  'modal.task_command_router.TaskExecPollResponse',
  'modal.task_command_router.TaskSnapshotFilesystemRequest',
  'modal.task_command_router.TaskSnapshotFilesystemResponse',
];

/** Newer SDK fields the fake neither reads nor sends (Patchbay never sets them). */
const ignored = new Set([
  'EnvironmentSettings.blockUnauthenticatedResources',
  'AppGetOrCreateResponse.handleMetadata',
  'Image.arch',
  'SandboxCreateV2Response.sandboxToken',
  'Sandbox.experimentalOutboundPolicy',
  'Sandbox.includeX509Svid',
  'Sandbox.outboundPolicy',
  // ts-proto spells `_restore_instance_type` without its leading underscore; same field 35.
  'Sandbox.RestoreInstanceType',
]);

/** Field name → number, from each `var X = { encode(message, writer) {...} }` the SDK bundles. */
function sdkEncoders(): Map<string, Record<string, number>> {
  const require = createRequire(import.meta.url);
  const source = readFileSync(join(dirname(require.resolve('modal')), 'index.js'), 'utf8');
  const encoders = new Map<string, Record<string, number>>();
  for (const match of source.matchAll(
    /\nvar (\w+) = \{\n {2}encode\(message, writer = new BinaryWriter\(\)\) \{([\s\S]*?)\n {4}return writer;\n {2}\},/g,
  )) {
    const fields: Record<string, number> = {};
    // Each top-level statement of encode() handles one field: `message.x` and its tag.
    for (const statement of match[2]!.split(/\n {4}(?=if \(|for \(|Object\.entries|writer\.)/)) {
      const name = /message\.(\w+)/.exec(statement)?.[1];
      const tag = /writer\.uint32\((\d+)\)/.exec(statement)?.[1];
      if (name && tag) fields[name] = Number(tag) >> 3;
    }
    encoders.set(match[1]!, fields);
  }
  return encoders;
}

describe('the vendored Modal protos against the modal 0.11.1 SDK', () => {
  it('agree on every field number of the messages the fake serves', () => {
    const protoDir = join(dirname(fileURLToPath(import.meta.url)), 'protos');
    const root = new protobuf.Root();
    root.resolvePath = (_origin, target) => (target.startsWith('google/') ? target : join(protoDir, target));
    root.loadSync(['modal_proto/api.proto', 'modal_proto/task_command_router.proto'], { keepCase: false });
    const encoders = sdkEncoders();
    expect(encoders.size).toBeGreaterThan(500);
    const problems: string[] = [];
    for (const name of messages) {
      const type = root.lookupType(name);
      const short = name.split('.').pop()!;
      const sdk = encoders.get(short);
      if (!sdk) {
        // Messages with no fields have no statements; both sides must agree there are none.
        if (type.fieldsArray.length > 0) problems.push(`${short}: not found in the SDK`);
        continue;
      }
      for (const [field, id] of Object.entries(sdk)) {
        const proto = type.fields[field];
        if (!proto) {
          if (!ignored.has(`${short}.${field}`))
            problems.push(`${short}.${field} = ${id}: missing from the vendored protos`);
        } else if (proto.id !== id) {
          problems.push(`${short}.${field}: the SDK writes field ${id}, the protos say ${proto.id}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });
});
