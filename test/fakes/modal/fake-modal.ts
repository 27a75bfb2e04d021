import { randomBytes, randomUUID } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import {
  copyContainerFs,
  killMarked,
  makeContainerFs,
  removeContainerFs,
  startInContainer,
  writeImageFiles,
} from './fake-modal-container.ts';
import {
  commandTooLarge,
  MAX_MESSAGE_BYTES,
  messageTooLarge,
  networkRefusal,
  outboundAllowed,
  type OutboundTarget,
} from './fake-modal-limits.ts';
import { buildImage, type ImageBuild, type ImageTool } from './fake-modal-image.ts';
import { bridgeCommand, createInternet } from './fake-modal-internet.ts';

/**
 * A loopback Modal: the control plane (`modal.client.ModalClient`) and the task command router
 * (`modal.task_command_router.TaskCommandRouter`) from Modal's own protos (protos/, see README),
 * served with @grpc/grpc-js in plaintext HTTP/2. The SDK reaches the control plane through
 * MODAL_SERVER_URL=http://127.0.0.1:P; the router is announced as https://127.0.0.1:Q, which the
 * SDK dials without TLS because the profile's server is a loopback address (modal 0.11.1
 * `TaskCommandRouterClientImpl.tryInit`).
 *
 * It serves exactly the calls in COVERED below. Every other method, a call without the token
 * pair or the auth token it issued, a router call without the sandbox's JWT, and a request naming
 * an unknown app, image, sandbox, task or exec is refused with the gRPC status the real service
 * uses and recorded in `refusals`, which tests assert empty.
 */
export const COVERED = {
  controlPlane: [
    'AuthTokenGet',
    'EnvironmentGetOrCreate',
    'AppGetOrCreate',
    'ImageGetOrCreate',
    'ImageJoinStreaming',
    'ImageFromId',
    'SandboxCreateV2',
    'SandboxGetTaskIdV2',
    'SandboxGetCommandRouterAccess',
    'SandboxWaitV2',
    'SandboxTerminateV2',
    'SandboxListV2',
    'SandboxTagsGetV2',
    'SandboxGetExitSnapshotV2',
  ],
  router: [
    'TaskExecStart',
    'TaskExecStdioRead',
    'TaskExecStdinWrite',
    'TaskExecWait',
    'TaskExecPoll',
    'TaskSnapshotFilesystem',
  ],
} as const;

const protoDir = join(dirname(fileURLToPath(import.meta.url)), 'protos');

// GenericResult.GenericStatus
export const Status = {
  SUCCESS: 1,
  FAILURE: 2,
  TERMINATED: 3,
  TIMEOUT: 4,
  INIT_FAILURE: 5,
  INTERNAL_FAILURE: 6,
  IDLE_TIMEOUT: 7,
} as const;

type GenericResult = { status: number; exception: string; exitcode: number };
type Tag = { tagName: string; tagValue: string };

export type FakeSandboxRecord = {
  sandboxId: string;
  taskId: string;
  appId: string;
  imageId: string;
  tags: Tag[];
  /** The definition as the SDK sent it (decoded), for tests to check settings. */
  definition: Record<string, unknown>;
  fsDir: string;
  /** Made from a registry image `FROM scratch`: its commands find no system files. */
  bare: boolean;
  /** What the image's build put on PATH (see fake-modal-image.ts). */
  tools: ImageTool[];
  createdAt: number;
  /** Fake-clock time (ms) of the last command, input or output: the idle timeout counts from it. */
  activeAt: number;
  /** Fake-clock time (ms) of the sandbox's time limit (`timeout_secs`). */
  deadline: number;
  result?: GenericResult;
  jwt: string;
  execs: Map<string, FakeExec>;
  /** Created with `enable_exit_snapshot`: its filesystem is saved when it ends. */
  exitSnapshot?: { state: 'pending' } | { state: 'done'; imageId: string } | { state: 'failed'; message: string };
};

type FakeExec = {
  proc: ChildProcess;
  out: [Buffer[], Buffer[]];
  outBytes: [number, number];
  /** Breaks this exec's stdout stream once (see faultStdio). */
  fault?: StdioFault;
  /** Fails this exec's stdin writes (see failStdin). */
  stdinFault?: { code: grpc.status; details: string };
  exit?: { code: number } | { signal: number };
  listeners: Set<() => void>;
  stdinOffset: number;
  args: string[];
  /** The environment the SDK sent for the command. */
  env: Record<string, string>;
};

type FakeImage =
  | {
      imageId: string;
      kind: 'registry';
      dockerfileCommands: string[];
      tools: ImageTool[];
      build: ImageBuild;
      buildFailure?: string;
    }
  /** `expiresAt`: fake-clock ms after which Modal has deleted the snapshot (its TTL), absent for no TTL. */
  | {
      imageId: string;
      kind: 'snapshot';
      fsDir: string;
      fromSandbox: string;
      bare?: boolean;
      tools: ImageTool[];
      expiresAt?: number;
    };

/** A fault in the next exec's output stream (stdout), as a dropped connection or a broken server sends it. */
export type StdioFault = { afterBytes: number; kind: 'end' | 'error' };

export type FakeModalOptions = {
  tokenId?: string;
  tokenSecret?: string;
  /** Image builds end with this failure instead of success. */
  imageBuildFailure?: string;
  /** Output streams deliver at most this many bytes per second (Modal's streams are far slower than loopback). */
  stdioBytesPerSecond?: number;
};

export type FakeModal = {
  /** For MODAL_SERVER_URL. */
  url: string;
  tokenId: string;
  tokenSecret: string;
  /** Every call the fake refused, as "<Method>: <why>". */
  refusals: string[];
  /** Every call served, in order, by method name. */
  calls: string[];
  sandboxes: Map<string, FakeSandboxRecord>;
  images: Map<string, FakeImage>;
  /**
   * Ends the sandbox as Modal does when its container dies: its commands are killed, its result set,
   * and its exit snapshot (when enabled) taken, unless `exitSnapshot: false` (the worker was lost).
   */
  kill(sandboxId: string, result?: Partial<GenericResult>, options?: { exitSnapshot?: boolean }): void;
  /** The next SandboxCreateV2 fails with this status (for example RESOURCE_EXHAUSTED for a quota). */
  failNextCreate(code: grpc.status, details: string): void;
  /** The next `count` TaskSnapshotFilesystem calls fail with this status. */
  failSnapshots(count: number, code: grpc.status, details: string): void;
  /** Streams of commands whose arguments contain `match` break as `fault` says, once each. */
  faultStdio(match: string, fault: StdioFault): void;
  /** Stdin writes to the next command whose arguments contain `match` fail with this status. */
  failStdin(match: string, code: grpc.status, details: string): void;
  /** Output streams deliver at most this many bytes per second from now on (undefined: as fast as loopback). */
  throttleStdio(bytesPerSecond: number | undefined): void;
  /** Moves the fake's clock on (snapshot TTLs, sandbox time limits and idle timeouts count on it). */
  advance(ms: number): void;
  /**
   * Whether Modal would let an outbound connection from the sandbox to `target` out, by the network
   * policy it was created with (outboundAllowed); one it would block is recorded in `refusals`.
   * The fake's sandboxes themselves have no network (see README), so this is where the policy is held.
   */
  connect(sandboxId: string, target: OutboundTarget): boolean;
  /**
   * Puts `host:port` "on the internet" for the sandboxes, standing for `target` on this machine's
   * loopback (see fake-modal-internet.ts): a command reaches it when its sandbox's network policy
   * lets `host` (or `address`) out. The sandbox's own loopback is never the host's.
   */
  publish(host: string, port: number, target: { host: string; port: number }, address?: string): Promise<void>;
  close(): Promise<void>;
};

export async function startFakeModal(options: FakeModalOptions = {}): Promise<FakeModal> {
  const tokenId = options.tokenId ?? `ak-${randomBytes(8).toString('hex')}`;
  const tokenSecret = options.tokenSecret ?? `as-${randomBytes(8).toString('hex')}`;
  const definition = protoLoader.loadSync(['modal_proto/api.proto', 'modal_proto/task_command_router.proto'], {
    includeDirs: [protoDir],
    keepCase: false,
    longs: Number,
    enums: Number,
    defaults: true,
    oneofs: true,
  });
  const loaded = grpc.loadPackageDefinition(definition) as unknown as {
    modal: {
      client: { ModalClient: grpc.ServiceClientConstructor };
      task_command_router: { TaskCommandRouter: grpc.ServiceClientConstructor };
    };
  };
  const root = await mkdtemp(join(tmpdir(), 'fake-modal-'));
  const internet = createInternet(root);
  const refusals: string[] = [];
  const calls: string[] = [];
  const apps = new Map<string, { appId: string; name: string }>();
  const images = new Map<string, FakeImage>();
  const sandboxes = new Map<string, FakeSandboxRecord>();
  const authTokens = new Set<string>();
  const messageSizes = new WeakMap<object, number>();
  let nextCreateFailure: { code: grpc.status; details: string } | undefined;
  let snapshotFailures: { count: number; code: grpc.status; details: string } = {
    count: 0,
    code: grpc.status.OK,
    details: '',
  };
  const stdioFaults: { match: string; fault: StdioFault }[] = [];
  const stdinFaults: { match: string; code: grpc.status; details: string }[] = [];
  let routerPort = 0;
  let clockOffset = 0;
  let stdioRate = options.stdioBytesPerSecond;
  const now = () => Date.now() + clockOffset;

  class Refusal extends Error {
    readonly code: grpc.status;
    readonly record: boolean;
    constructor(code: grpc.status, message: string, record = true) {
      super(message);
      this.code = code;
      this.record = record;
    }
  }
  const refuse = (code: grpc.status, message: string): never => {
    throw new Refusal(code, message);
  };
  /** A failure the real service gives in normal operation (not a malformed call): not a refusal. */
  const fail = (code: grpc.status, message: string): never => {
    throw new Refusal(code, message, false);
  };

  const checkControlPlaneAuth = (method: string, metadata: grpc.Metadata) => {
    const id = metadata.get('x-modal-token-id')[0];
    const secret = metadata.get('x-modal-token-secret')[0];
    if (id !== tokenId || secret !== tokenSecret)
      refuse(grpc.status.UNAUTHENTICATED, 'Token ID or secret is invalid: check MODAL_TOKEN_ID and MODAL_TOKEN_SECRET');
    if (metadata.get('x-modal-client-type').length === 0)
      refuse(grpc.status.FAILED_PRECONDITION, 'x-modal-client-type is missing');
    if (method !== 'AuthTokenGet' && !authTokens.has(String(metadata.get('x-modal-auth-token')[0] ?? ''))) {
      refuse(grpc.status.UNAUTHENTICATED, 'x-modal-auth-token is missing or was not issued by this server');
    }
  };

  const sandboxOf = (method: string, id: string): FakeSandboxRecord => {
    const sandbox = sandboxes.get(id);
    if (!sandbox) return refuse(grpc.status.NOT_FOUND, `${method}: sandbox ${JSON.stringify(id)} not found`);
    return sandbox;
  };

  const jwtFor = (claims: Record<string, unknown>): string => {
    const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    return `${part({ alg: 'HS256', typ: 'JWT' })}.${part({ ...claims, exp: Math.floor(Date.now() / 1000) + 3600 })}.${randomBytes(16).toString('base64url')}`;
  };

  const finish = (sandbox: FakeSandboxRecord, result: GenericResult, exitSnapshot = true) => {
    if (sandbox.result) return;
    sandbox.result = result;
    void killMarked(`FAKE_MODAL_SANDBOX=${sandbox.sandboxId}`);
    for (const exec of sandbox.execs.values()) {
      if (!exec.exit) killTree(exec.proc);
    }
    if (sandbox.exitSnapshot) {
      if (!exitSnapshot) {
        sandbox.exitSnapshot = {
          state: 'failed',
          message: 'the container was lost before its filesystem could be saved',
        };
        return;
      }
      const imageId = `im-${randomBytes(8).toString('hex')}`;
      const fsDir = join(root, 'images', imageId);
      const state = sandbox.exitSnapshot;
      void copyContainerFs(sandbox.fsDir, fsDir).then(
        () => {
          images.set(imageId, {
            imageId,
            kind: 'snapshot',
            fsDir,
            fromSandbox: sandbox.sandboxId,
            bare: sandbox.bare,
            tools: sandbox.tools,
          });
          if (sandbox.exitSnapshot === state) sandbox.exitSnapshot = { state: 'done', imageId };
        },
        (error: unknown) => {
          sandbox.exitSnapshot = { state: 'failed', message: String(error) };
        },
      );
    }
  };

  /** The image, unless it is unknown or its snapshot's TTL has run out (Modal deletes it then). */
  const liveImage = (imageId: string): FakeImage | undefined => {
    const image = images.get(imageId);
    if (image?.kind === 'snapshot' && image.expiresAt !== undefined && image.expiresAt <= now()) return undefined;
    return image;
  };
  /** Ends sandboxes past their time limit, and idle ones (no command running) past their idle timeout. */
  const sweep = () => {
    for (const sandbox of sandboxes.values()) {
      if (sandbox.result) continue;
      const idleSecs = Number(sandbox.definition.idleTimeoutSecs ?? 0);
      const running = [...sandbox.execs.values()].some((exec) => !exec.exit);
      if (now() >= sandbox.deadline)
        finish(sandbox, { status: Status.TIMEOUT, exception: 'Sandbox timed out', exitcode: 0 });
      else if (idleSecs > 0 && !running && now() - sandbox.activeAt >= idleSecs * 1000)
        finish(sandbox, { status: Status.IDLE_TIMEOUT, exception: 'Sandbox idle timeout', exitcode: 0 });
    }
  };
  const sweeper = setInterval(sweep, 250);
  sweeper.unref();

  // --- control plane ---------------------------------------------------------------------------
  type Unary = (request: any, metadata: grpc.Metadata) => Promise<unknown> | unknown;
  const controlPlane: Record<string, Unary> = {
    AuthTokenGet: () => {
      const token = jwtFor({ sub: tokenId });
      authTokens.add(token);
      return { token };
    },
    EnvironmentGetOrCreate: (request: { deploymentName: string }) => ({
      environmentId: 'en-fake',
      metadata: {
        name: request.deploymentName || 'main',
        settings: { imageBuilderVersion: '2025.06', webhookSuffix: '' },
      },
    }),
    AppGetOrCreate: (request: { appName: string; objectCreationType: number }) => {
      if (!request.appName) refuse(grpc.status.INVALID_ARGUMENT, 'app_name is required');
      const existing = [...apps.values()].find((app) => app.name === request.appName);
      if (existing) return { appId: existing.appId };
      // OBJECT_CREATION_TYPE_CREATE_IF_MISSING = 1
      if (request.objectCreationType !== 1) fail(grpc.status.NOT_FOUND, `App '${request.appName}' not found`);
      const app = { appId: `ap-${randomBytes(8).toString('hex')}`, name: request.appName };
      apps.set(app.appId, app);
      return { appId: app.appId };
    },
    ImageGetOrCreate: (request: {
      appId: string;
      image: { dockerfileCommands: string[]; baseImages: { imageId: string }[] };
    }) => {
      if (!apps.has(request.appId)) refuse(grpc.status.NOT_FOUND, `app ${request.appId} not found`);
      const commands = request.image?.dockerfileCommands ?? [];
      if (!/^FROM \S+/.test(commands[0] ?? '')) refuse(grpc.status.INVALID_ARGUMENT, 'the image has no FROM line');
      for (const base of request.image.baseImages)
        if (!images.has(base.imageId)) refuse(grpc.status.NOT_FOUND, `base image ${base.imageId} not found`);
      const existing = [...images.values()].find(
        (image) => image.kind === 'registry' && image.dockerfileCommands.join('\n') === commands.join('\n'),
      );
      const parent = images.get(request.image.baseImages[0]?.imageId ?? '');
      const build = buildImage(commands, parent?.kind === 'registry' ? parent.build : undefined);
      const image = existing ?? {
        imageId: `im-${randomBytes(8).toString('hex')}`,
        kind: 'registry' as const,
        dockerfileCommands: commands,
        tools: build.tools,
        build,
        ...(build.failure && { buildFailure: build.failure }),
      };
      images.set(image.imageId, image);
      return { imageId: image.imageId };
    },
    ImageFromId: (request: { imageId: string }) => {
      if (!liveImage(request.imageId)) fail(grpc.status.NOT_FOUND, `Image ${request.imageId} not found`);
      return { imageId: request.imageId, metadata: {} };
    },
    SandboxCreateV2: (request: { appId: string; definition: Record<string, any>; tags: Tag[] }) => {
      if (!apps.has(request.appId)) refuse(grpc.status.NOT_FOUND, `app ${request.appId} not found`);
      const def = request.definition;
      if (!def) return refuse(grpc.status.INVALID_ARGUMENT, 'definition is required');
      const image = liveImage(def.imageId);
      if (!image) return fail(grpc.status.NOT_FOUND, `Image ${def.imageId} not found`);
      const network = networkRefusal(def.networkAccess);
      if (network) refuse(grpc.status.INVALID_ARGUMENT, network);
      if (!(def.timeoutSecs > 0)) refuse(grpc.status.INVALID_ARGUMENT, 'timeout_secs must be positive');
      const access = def.networkAccess?.networkAccessType;
      if (def.blockNetwork && access !== 2)
        refuse(grpc.status.INVALID_ARGUMENT, 'block_network without network_access BLOCKED');
      if ((request as { secretSources?: unknown[] }).secretSources?.length)
        refuse(grpc.status.INVALID_ARGUMENT, 'the fake serves no sandbox-wide secrets or env');
      if (nextCreateFailure) {
        const failure = nextCreateFailure;
        nextCreateFailure = undefined;
        fail(failure.code, failure.details);
      }
      const sandboxId = `sb-${randomUUID()}`;
      const taskId = `ta-${randomBytes(11).toString('hex')}`;
      return (async () => {
        const fsDir = join(root, sandboxId);
        await makeContainerFs(fsDir, image.kind === 'snapshot' ? image.fsDir : undefined);
        if (image.kind === 'registry') await writeImageFiles(fsDir, image.build.files);
        const sandbox: FakeSandboxRecord = {
          sandboxId,
          taskId,
          appId: request.appId,
          imageId: image.imageId,
          tags: request.tags ?? [],
          definition: def,
          fsDir,
          bare:
            image.kind === 'registry' ? /^FROM scratch$/i.test(image.dockerfileCommands[0] ?? '') : image.bare === true,
          tools: image.tools,
          createdAt: Date.now() / 1000,
          activeAt: now(),
          deadline: now() + def.timeoutSecs * 1000,
          jwt: jwtFor({ sandbox_id: sandboxId, task_id: taskId }),
          execs: new Map(),
          ...(def.experimentalOptionsV2?.enable_exit_snapshot === 'true' && {
            exitSnapshot: { state: 'pending' as const },
          }),
        };
        sandboxes.set(sandboxId, sandbox);
        return {
          sandboxId,
          taskId,
          tunnels: [],
          metadata: { appId: request.appId },
          commandRouterAccess: { jwt: sandbox.jwt, url: `https://127.0.0.1:${routerPort}` },
        };
      })();
    },
    SandboxGetTaskIdV2: (request: { sandboxId: string }) => {
      const sandbox = sandboxOf('SandboxGetTaskIdV2', request.sandboxId);
      return sandbox.result ? { taskResult: sandbox.result } : { taskId: sandbox.taskId };
    },
    SandboxGetCommandRouterAccess: (request: { sandboxId?: string; target?: string }) => {
      if (request.target !== 'sandboxId')
        refuse(grpc.status.INVALID_ARGUMENT, 'target must be sandbox_id for a V2 sandbox');
      const sandbox = sandboxOf('SandboxGetCommandRouterAccess', request.sandboxId!);
      if (sandbox.result) fail(grpc.status.FAILED_PRECONDITION, `Sandbox ${sandbox.sandboxId} has finished`);
      return { jwt: sandbox.jwt, url: `https://127.0.0.1:${routerPort}`, workerIpv4Address: '' };
    },
    SandboxWaitV2: async (request: { sandboxId: string; timeout: number }) => {
      const sandbox = sandboxOf('SandboxWaitV2', request.sandboxId);
      const deadline = Date.now() + Math.min(request.timeout, 50) * 1000;
      while (!sandbox.result && Date.now() < deadline) await sleep(50);
      return {
        ...(sandbox.result && { result: sandbox.result }),
        metadata: { appId: sandbox.appId, ...(sandbox.result && { result: sandbox.result }) },
      };
    },
    SandboxTerminateV2: (request: { sandboxId: string }) => {
      const sandbox = sandboxOf('SandboxTerminateV2', request.sandboxId);
      finish(sandbox, { status: Status.TERMINATED, exception: 'Sandbox was terminated', exitcode: 0 });
      return {};
    },
    SandboxListV2: (request: { appId: string; beforeTimestamp: number; includeFinished: boolean; tags: Tag[] }) => {
      if (request.appId && !apps.has(request.appId)) refuse(grpc.status.NOT_FOUND, `app ${request.appId} not found`);
      const matches = [...sandboxes.values()]
        .filter((sb) => (!request.appId || sb.appId === request.appId) && (request.includeFinished || !sb.result))
        .filter((sb) => !request.beforeTimestamp || sb.createdAt < request.beforeTimestamp)
        .filter((sb) =>
          request.tags.every((tag) => sb.tags.some((t) => t.tagName === tag.tagName && t.tagValue === tag.tagValue)),
        )
        .sort((a, b) => b.createdAt - a.createdAt)
        .slice(0, 100);
      return {
        sandboxes: matches.map((sb) => ({
          id: sb.sandboxId,
          createdAt: sb.createdAt,
          appId: sb.appId,
          tags: sb.tags,
          imageId: sb.imageId,
        })),
      };
    },
    SandboxTagsGetV2: (request: { sandboxId: string }) => ({
      tags: sandboxOf('SandboxTagsGetV2', request.sandboxId).tags,
    }),
    SandboxGetExitSnapshotV2: async (request: { sandboxId: string; timeout: number }) => {
      const sandbox = sandboxOf('SandboxGetExitSnapshotV2', request.sandboxId);
      if (!sandbox.exitSnapshot)
        fail(grpc.status.INVALID_ARGUMENT, 'exit snapshots were not enabled when the sandbox was created');
      const deadline = Date.now() + Math.min(request.timeout, 50) * 1000;
      while ((!sandbox.result || sandbox.exitSnapshot!.state === 'pending') && Date.now() < deadline) await sleep(50);
      const state = sandbox.exitSnapshot!;
      if (!sandbox.result || state.state === 'pending') return { pending: {} };
      // ERROR_CODE_INTERNAL = 2
      if (state.state === 'failed') return { error: { errorCode: 2, message: state.message } };
      return { success: { imageId: state.imageId } };
    },
  };

  const controlPlaneStreams: Record<
    string,
    (request: any, call: grpc.ServerWritableStream<any, any>) => Promise<void>
  > = {
    ImageJoinStreaming: async (request: { imageId: string }, call) => {
      const image = images.get(request.imageId);
      if (!image) return refuse(grpc.status.NOT_FOUND, `image ${request.imageId} not found`);
      const buildFailure = image.kind === 'registry' ? image.buildFailure : undefined;
      if (buildFailure) refusals.push(`ImageJoinStreaming: the build fails: ${buildFailure}`);
      const failure = options.imageBuildFailure ?? buildFailure;
      const result = failure
        ? { status: Status.FAILURE, exception: failure, exitcode: 1 }
        : { status: Status.SUCCESS, exception: '', exitcode: 0 };
      call.write({ taskLogs: [{ data: 'Building image (fake)\n', fileDescriptor: 1 }], entryId: '1-0' });
      call.write({
        result,
        entryId: '2-0',
        eof: true,
        ...(result.status === Status.SUCCESS && { metadata: { imageBuilderVersion: '2025.06' } }),
      });
    },
  };

  // --- command router --------------------------------------------------------------------------
  const routerSandbox = (method: string, metadata: grpc.Metadata, taskId: string): FakeSandboxRecord => {
    const auth = String(metadata.get('authorization')[0] ?? '');
    const sandbox = [...sandboxes.values()].find((sb) => `Bearer ${sb.jwt}` === auth);
    if (!sandbox) return refuse(grpc.status.UNAUTHENTICATED, `${method}: no valid Bearer JWT`);
    if (sandbox.taskId !== taskId)
      refuse(grpc.status.PERMISSION_DENIED, `${method}: the JWT is not for task ${taskId}`);
    // A finished task's router is gone; the SDK sees the call fail (not a malformed call).
    if (sandbox.result) fail(grpc.status.NOT_FOUND, `Task ${taskId} has finished: ${sandbox.result.exception}`);
    return sandbox;
  };
  const execOf = (method: string, sandbox: FakeSandboxRecord, execId: string): FakeExec => {
    const exec = sandbox.execs.get(execId);
    if (!exec) return refuse(grpc.status.NOT_FOUND, `${method}: exec ${execId} not found`);
    return exec;
  };
  /** The internet's hosts this sandbox's network policy lets out, bridged into one command (none published: the command as it is). */
  const bridgesFor = (sandbox: FakeSandboxRecord, args: string[]) => {
    if (internet.hosts.length === 0 || sandbox.bare) return { args, bwrapArgs: [] };
    const policy = sandbox.definition.networkAccess as Parameters<typeof outboundAllowed>[0];
    const open = internet.hosts.filter((h) => outboundAllowed(policy, { host: h.host, address: h.address }));
    return bridgeCommand(open, internet.hostsFile, args);
  };
  const notify = (exec: FakeExec) => {
    for (const listener of exec.listeners) listener();
  };

  const router: Record<string, Unary> = {
    TaskExecStart: (
      request: {
        taskId: string;
        execId: string;
        commandArgs: string[];
        timeoutSecs?: number;
        workdir?: string;
        env: Record<string, string>;
        secretSources: { secretId?: string; env?: { contents: Record<string, string> } }[];
        ptyInfo?: unknown;
        containerId: string;
      },
      metadata,
    ) => {
      const sandbox = routerSandbox('TaskExecStart', metadata, request.taskId);
      if (request.containerId) refuse(grpc.status.INVALID_ARGUMENT, 'the fake has no sidecar containers');
      // modal 0.11.1 sends an exec's env as a secret source; named Modal secrets are not served.
      const env: Record<string, string> = { ...request.env };
      for (const source of request.secretSources) {
        if (source.secretId)
          refuse(grpc.status.NOT_FOUND, `secret ${source.secretId} not found (the fake serves no named secrets)`);
        Object.assign(env, source.env?.contents ?? {});
      }
      if (!request.execId) refuse(grpc.status.INVALID_ARGUMENT, 'exec_id is required');
      if (sandbox.execs.has(request.execId)) return {}; // idempotent by exec id
      if (request.commandArgs.length === 0) refuse(grpc.status.INVALID_ARGUMENT, 'command_args is empty');
      const tooLarge = commandTooLarge(request.commandArgs);
      if (tooLarge) refuse(grpc.status.INVALID_ARGUMENT, tooLarge);
      sandbox.activeAt = now();
      if (request.ptyInfo) refuse(grpc.status.INVALID_ARGUMENT, 'the fake does not serve PTYs');
      const workdir = request.workdir ?? (sandbox.definition.workdir as string | undefined) ?? '/';
      const bridged = bridgesFor(sandbox, request.commandArgs);
      const proc = startInContainer({
        fsDir: sandbox.fsDir,
        args: bridged.args,
        workdir,
        bare: sandbox.bare,
        tools: sandbox.tools,
        extraBinds: bridged.bwrapArgs,
        env: { ...env, FAKE_MODAL_SANDBOX: sandbox.sandboxId, FAKE_MODAL_EXEC: request.execId },
      });
      const faultAt = stdioFaults.findIndex((f) => request.commandArgs.some((arg) => arg.includes(f.match)));
      const fault = faultAt >= 0 ? stdioFaults.splice(faultAt, 1)[0]!.fault : undefined;
      const stdinAt = stdinFaults.findIndex((f) => request.commandArgs.some((arg) => arg.includes(f.match)));
      const stdinFault = stdinAt >= 0 ? stdinFaults.splice(stdinAt, 1)[0] : undefined;
      const exec: FakeExec = {
        proc,
        out: [[], []],
        outBytes: [0, 0],
        listeners: new Set(),
        stdinOffset: 0,
        args: request.commandArgs,
        env,
        ...(fault && { fault }),
        ...(stdinFault && { stdinFault: { code: stdinFault.code, details: stdinFault.details } }),
      };
      sandbox.execs.set(request.execId, exec);
      proc.stdout!.on('data', (chunk: Buffer) => {
        exec.out[0].push(chunk);
        exec.outBytes[0] += chunk.length;
        notify(exec);
      });
      proc.stderr!.on('data', (chunk: Buffer) => {
        exec.out[1].push(chunk);
        exec.outBytes[1] += chunk.length;
        notify(exec);
      });
      proc.stdin!.on('error', () => undefined);
      proc.on('close', (code, signal) => {
        exec.exit = code !== null ? { code } : { signal: signal ? (osSignal(signal) ?? 9) : 9 };
        sandbox.activeAt = now();
        notify(exec);
      });
      if (request.timeoutSecs)
        setTimeout(
          () => exec.exit || void killMarked(`FAKE_MODAL_EXEC=${request.execId}`),
          request.timeoutSecs * 1000,
        ).unref();
      return {};
    },
    TaskExecStdinWrite: (
      request: { taskId: string; execId: string; offset: number; data: Buffer; eof: boolean },
      metadata,
    ) => {
      const sandbox = routerSandbox('TaskExecStdinWrite', metadata, request.taskId);
      const exec = execOf('TaskExecStdinWrite', sandbox, request.execId);
      if (request.offset > exec.stdinOffset)
        refuse(grpc.status.OUT_OF_RANGE, `stdin offset ${request.offset} is past ${exec.stdinOffset}`);
      sandbox.activeAt = now();
      if (exec.stdinFault) fail(exec.stdinFault.code, exec.stdinFault.details);
      const fresh = request.data.subarray(exec.stdinOffset - request.offset);
      if (fresh.length > 0 && !exec.exit) exec.proc.stdin!.write(fresh);
      exec.stdinOffset += fresh.length;
      if (request.eof) exec.proc.stdin!.end();
      return {};
    },
    TaskExecWait: async (request: { taskId: string; execId: string }, metadata) => {
      const sandbox = routerSandbox('TaskExecWait', metadata, request.taskId);
      const exec = execOf('TaskExecWait', sandbox, request.execId);
      while (!exec.exit) {
        await new Promise<void>((resolve) => {
          exec.listeners.add(resolve);
          setTimeout(resolve, 200).unref();
        });
        if (sandbox.result)
          fail(grpc.status.UNAVAILABLE, `Task ${sandbox.taskId} is gone: ${sandbox.result.exception}`);
      }
      if (sandbox.result) fail(grpc.status.UNAVAILABLE, `Task ${sandbox.taskId} is gone: ${sandbox.result.exception}`);
      return exec.exit;
    },
    TaskExecPoll: (request: { taskId: string; execId: string }, metadata) => {
      const sandbox = routerSandbox('TaskExecPoll', metadata, request.taskId);
      return execOf('TaskExecPoll', sandbox, request.execId).exit ?? {};
    },
    TaskSnapshotFilesystem: async (
      request: { taskId: string; snapshotId: string; ttlSeconds?: number; containerId: string },
      metadata,
    ) => {
      const sandbox = routerSandbox('TaskSnapshotFilesystem', metadata, request.taskId);
      if (request.containerId) refuse(grpc.status.INVALID_ARGUMENT, 'the fake has no sidecar containers');
      if (!request.snapshotId) refuse(grpc.status.INVALID_ARGUMENT, 'snapshot_id is required');
      if (request.ttlSeconds === undefined || (request.ttlSeconds <= 0 && request.ttlSeconds !== -1))
        refuse(grpc.status.INVALID_ARGUMENT, 'ttl_seconds must be set: positive, or -1');
      if (snapshotFailures.count > 0) {
        snapshotFailures.count--;
        fail(snapshotFailures.code, snapshotFailures.details);
      }
      const imageId = `im-${randomBytes(8).toString('hex')}`;
      const fsDir = join(root, 'images', imageId);
      await copyContainerFs(sandbox.fsDir, fsDir);
      const ttlSeconds = request.ttlSeconds ?? -1;
      const expiresAt = ttlSeconds === -1 ? undefined : now() + ttlSeconds * 1000;
      images.set(imageId, {
        imageId,
        kind: 'snapshot',
        fsDir,
        fromSandbox: sandbox.sandboxId,
        bare: sandbox.bare,
        tools: sandbox.tools,
        ...(expiresAt !== undefined && { expiresAt }),
      });
      return { imageId };
    },
  };

  const routerStreams: Record<string, (request: any, call: grpc.ServerWritableStream<any, any>) => Promise<void>> = {
    TaskExecStdioRead: async (
      request: { taskId: string; execId: string; offset: number; fileDescriptor: number },
      call,
    ) => {
      const sandbox = routerSandbox('TaskExecStdioRead', call.metadata, request.taskId);
      const exec = execOf('TaskExecStdioRead', sandbox, request.execId);
      if (request.fileDescriptor !== 0 && request.fileDescriptor !== 1)
        refuse(grpc.status.INVALID_ARGUMENT, `file_descriptor ${request.fileDescriptor}`);
      const fd = request.fileDescriptor as 0 | 1;
      const fault = fd === 0 ? exec.fault : undefined;
      if (fault) delete exec.fault;
      const rate = stdioRate;
      let offset = request.offset;
      for (;;) {
        if (exec.outBytes[fd] > offset) {
          // Chunks as Modal sends them (64 KiB), found by walking the list: output of any size costs one pass.
          let at = 0;
          for (const chunk of exec.out[fd]) {
            const end = at + chunk.length;
            for (let from = Math.max(offset, at); from < end; ) {
              const to = Math.min(end, from + 64 * 1024);
              if (fault && to - request.offset > fault.afterBytes) {
                if (fault.kind === 'end') return;
                return fail(grpc.status.FAILED_PRECONDITION, `stdio stream for exec ${request.execId} was reset`);
              }
              if (!call.write({ data: chunk.subarray(from - at, to - at) }))
                await new Promise((resolve) => call.once('drain', resolve));
              if (rate) await sleep(((to - from) / rate) * 1000);
              if (call.cancelled) return;
              sandbox.activeAt = now();
              offset = to;
              from = to;
            }
            at = end;
          }
          continue;
        }
        if (sandbox.result)
          fail(grpc.status.UNAVAILABLE, `Task ${sandbox.taskId} is gone: ${sandbox.result.exception}`);
        if (exec.exit || call.cancelled) return;
        await new Promise<void>((resolve) => {
          exec.listeners.add(resolve);
          setTimeout(resolve, 200).unref();
        });
      }
    },
  };

  // --- wiring ----------------------------------------------------------------------------------
  const serve = (
    service: grpc.ServiceDefinition,
    unary: Record<string, Unary>,
    streams: Record<string, (request: any, call: grpc.ServerWritableStream<any, any>) => Promise<void>>,
    checkAuth?: (method: string, metadata: grpc.Metadata) => void,
  ) => {
    const handlers: grpc.UntypedServiceImplementation = {};
    for (const [name, method] of Object.entries(service)) {
      // The service refuses a request message over gRPC's 4 MiB; the fake measures each one as it is
      // decoded so the refusal is recorded (grpc-js's own limit, raised below, would not record it).
      const decode = method.requestDeserialize;
      method.requestDeserialize = (bytes: Buffer) => {
        const message = decode(bytes);
        if (message && typeof message === 'object') messageSizes.set(message, bytes.length);
        return message;
      };
      const checkSize = (request: object) => {
        const tooLarge = messageTooLarge(messageSizes.get(request) ?? 0);
        if (tooLarge) refuse(grpc.status.RESOURCE_EXHAUSTED, tooLarge);
      };
      const rpc = method.path.split('/').pop()!;
      const onError = (error: unknown): grpc.ServiceError => {
        const refusal =
          error instanceof Refusal ? error : new Refusal(grpc.status.INTERNAL, `${(error as Error).message}`);
        if (refusal.record) refusals.push(`${rpc}: ${refusal.message}`);
        return Object.assign(new Error(refusal.message), {
          code: refusal.code,
          details: refusal.message,
          metadata: new grpc.Metadata(),
        });
      };
      if (method.requestStream) {
        handlers[name] = (call: any, callback?: grpc.sendUnaryData<unknown>) => {
          const error = onError(new Refusal(grpc.status.UNIMPLEMENTED, `${rpc} is not served by the fake`));
          if (callback) callback(error);
          else call.destroy(error);
        };
      } else if (method.responseStream) {
        handlers[name] = (call: grpc.ServerWritableStream<any, any>) => {
          void (async () => {
            checkAuth?.(rpc, call.metadata);
            checkSize(call.request);
            const handler = streams[rpc];
            if (!handler) refuse(grpc.status.UNIMPLEMENTED, `${rpc} is not served by the fake`);
            calls.push(rpc);
            await handler!(call.request, call);
          })().then(
            () => call.end(),
            // grpc-js sends a stream's status from its error event; destroy() would leave the client waiting.
            (error: unknown) => call.emit('error', onError(error)),
          );
        };
      } else {
        handlers[name] = (call: grpc.ServerUnaryCall<any, any>, callback: grpc.sendUnaryData<unknown>) => {
          void (async () => {
            checkAuth?.(rpc, call.metadata);
            checkSize(call.request);
            const handler = unary[rpc];
            if (!handler) refuse(grpc.status.UNIMPLEMENTED, `${rpc} is not served by the fake`);
            calls.push(rpc);
            return handler!(call.request, call.metadata);
          })().then(
            (response) => callback(null, response),
            (error: unknown) => callback(onError(error)),
          );
        };
      }
    }
    return handlers;
  };

  const listen = async (server: grpc.Server) =>
    new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, port) =>
        error ? reject(error) : resolve(port),
      ),
    );
  const serverOptions = { 'grpc.max_receive_message_length': 16 * MAX_MESSAGE_BYTES };
  const cpServer = new grpc.Server(serverOptions);
  cpServer.addService(
    loaded.modal.client.ModalClient.service,
    serve(loaded.modal.client.ModalClient.service, controlPlane, controlPlaneStreams, checkControlPlaneAuth),
  );
  const routerServer = new grpc.Server(serverOptions);
  routerServer.addService(
    loaded.modal.task_command_router.TaskCommandRouter.service,
    serve(loaded.modal.task_command_router.TaskCommandRouter.service, router, routerStreams),
  );
  const cpPort = await listen(cpServer);
  routerPort = await listen(routerServer);

  return {
    url: `http://127.0.0.1:${cpPort}`,
    tokenId,
    tokenSecret,
    refusals,
    calls,
    sandboxes,
    images,
    publish: (host, port, target, address) => internet.publish(host, port, target, address),
    connect(sandboxId, target) {
      const sandbox = sandboxes.get(sandboxId);
      if (!sandbox) throw new Error(`no sandbox ${sandboxId}`);
      const allowed = outboundAllowed(
        sandbox.definition.networkAccess as Parameters<typeof outboundAllowed>[0],
        target,
      );
      if (!allowed)
        refusals.push(`outbound: ${sandboxId} may not connect to ${target.host ?? target.address} (${target.address})`);
      return allowed;
    },
    kill(sandboxId, result = {}, options = {}) {
      const sandbox = sandboxes.get(sandboxId);
      if (!sandbox) throw new Error(`no sandbox ${sandboxId}`);
      finish(
        sandbox,
        {
          status: Status.FAILURE,
          exception: 'Sandbox container exited unexpectedly (worker lost)',
          exitcode: 1,
          ...result,
        },
        options.exitSnapshot ?? true,
      );
    },
    failNextCreate(code, details) {
      nextCreateFailure = { code, details };
    },
    failSnapshots(count, code, details) {
      snapshotFailures = { count, code, details };
    },
    faultStdio(match, fault) {
      stdioFaults.push({ match, fault });
    },
    failStdin(match, code, details) {
      stdinFaults.push({ match, code, details });
    },
    throttleStdio(bytesPerSecond) {
      stdioRate = bytesPerSecond;
    },
    advance(ms) {
      clockOffset += ms;
      sweep();
    },
    async close() {
      clearInterval(sweeper);
      for (const sandbox of sandboxes.values())
        finish(sandbox, { status: Status.TERMINATED, exception: 'fake closed', exitcode: 0 });
      cpServer.forceShutdown();
      routerServer.forceShutdown();
      for (const sandbox of sandboxes.values()) await removeContainerFs(sandbox.fsDir);
      await internet.close();
      await rm(root, { recursive: true, force: true });
    },
  };
}

function killTree(proc: ChildProcess): void {
  try {
    if (proc.pid) process.kill(-proc.pid, 'SIGKILL');
  } catch {
    proc.kill('SIGKILL');
  }
}

function osSignal(name: NodeJS.Signals): number | undefined {
  const signals: Partial<Record<NodeJS.Signals, number>> = { SIGKILL: 9, SIGTERM: 15, SIGINT: 2, SIGHUP: 1 };
  return signals[name];
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
