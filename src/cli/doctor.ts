import { existsSync } from 'node:fs';
import type { Logger } from 'pino';
import { loadConfig, type Config } from '../config.ts';
import { describeError } from '../core/errors.ts';
import { modalLogger } from '../../sandbox/index.ts';
import { modalError } from '../../sandbox/modal/modal-errors.ts';
import {
  checkDatabase,
  checkDisk,
  checkGitHub,
  checkLinear,
  checkSandbox,
  checkSlack,
  type DoctorDeps,
  type DoctorRow,
} from './doctor-checks.ts';
import { checkModel } from './doctor-model-check.ts';
import { checkEngine } from './doctor-engine-check.ts';
import { eventRoutes } from './doctor-events.ts';
import { checkOpenAIEngine } from './doctor-openai-engines.ts';
import { checkCodexSignIn } from './doctor-codex-signin.ts';

export type DoctorOptions = {
  env: Record<string, string | undefined>;
  log: Logger;
  out: NodeJS.WritableStream;
  signal?: AbortSignal;
};

/**
 * `patchbay doctor`: the configuration, then one real read call to each configured service, the
 * sandbox, the database and the disk; a table of what works and what to do about what does not.
 * Exit code 0 when every row is green, 1 otherwise.
 */
export async function runDoctor(options: DoctorOptions): Promise<number> {
  const rows = await doctorRows(options);
  options.out.write(`${renderTable(rows)}\n`);
  const red = rows.filter((r) => !r.ok).length;
  options.out.write(
    red === 0
      ? '\nEverything Patchbay needs works.\n'
      : `\n${red} of ${rows.length} checks need attention (see "fix" above).\n`,
  );
  return red === 0 ? 0 : 1;
}

/** Every row, in the order a new operator sets things up. Checks run one after another: they are few and each is one call. */
export async function doctorRows(options: DoctorOptions): Promise<DoctorRow[]> {
  let config: Config;
  try {
    config = loadConfig(options.env);
  } catch (error) {
    return [
      {
        check: 'configuration',
        ok: false,
        detail: describeError(error).replace(/\n\s*/g, '; '),
        fix: 'fix the variables named (docs/configuration.md)',
      },
    ];
  }
  const deps: DoctorDeps = { config, log: options.log, signal: options.signal ?? AbortSignal.timeout(60_000) };
  const rows: DoctorRow[] = [{ check: 'configuration', ok: true, detail: configSummary(config) }];
  // Whether each surface's events can arrive, from the configuration alone.
  const events = async () => eventRoutes(config);
  const checks = [
    checkModel,
    checkEngine,
    checkOpenAIEngine,
    checkCodexSignIn,
    checkSlack,
    checkGitHub,
    checkLinear,
    events,
    checkModal,
    checkSandbox,
    checkDatabase,
    checkDisk,
  ];
  for (const check of checks) {
    const row = await check(deps).catch(
      (error: unknown): DoctorRow => ({
        check: check.name.replace(/^check/, '').toLowerCase(),
        ok: false,
        detail: describeError(error),
        fix: 'see the message',
      }),
    );
    if (row) rows.push(row);
  }
  return rows;
}

function configSummary(config: Config): string {
  const surfaces = [config.slack && 'Slack', config.github && 'GitHub', config.linear && 'Linear'].filter(Boolean);
  return `valid; surfaces: web, CLI${surfaces.length ? `, ${surfaces.join(', ')}` : ''}; PUBLIC_URL ${config.publicUrl}${config.apiToken ? '' : ' (no PATCHBAY_API_TOKEN: the API listens on loopback only)'}`;
}

/**
 * Modal: the credentials (tokens or the SDK's profile file), then one read through the SDK: the app
 * by name, not created (a missing app is fine: the first sandbox creates it).
 */
async function checkModal({ config, log }: DoctorDeps): Promise<DoctorRow | undefined> {
  const modal = config.sandbox.modal;
  if (!modal) return undefined;
  if (!modal.tokenId && !existsSync(modal.configFile)) {
    return {
      check: 'modal',
      ok: false,
      detail: 'SANDBOX=modal with no Modal credentials',
      fix: `set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET, or run \`modal token new\` to write ${modal.configFile}`,
    };
  }
  const { ModalClient } = await import('modal');
  const client = new ModalClient({
    ...(modal.tokenId && { tokenId: modal.tokenId }),
    ...(modal.tokenSecret && { tokenSecret: modal.tokenSecret }),
    logger: modalLogger(log),
  });
  try {
    const found = await Promise.race([
      client.apps.fromName(modal.appName, { createIfMissing: false }).then(
        () => true,
        (error: unknown) => {
          if (
            (error as { code?: unknown; name?: string }).code === 5 ||
            (error as { name?: string }).name === 'NotFoundError'
          )
            return false;
          throw error;
        },
      ),
      new Promise<never>((_, reject) =>
        setTimeout(
          () => reject(Object.assign(new Error('no answer in 20 s'), { name: 'TimeoutError' })),
          20_000,
        ).unref(),
      ),
    ]);
    return {
      check: 'modal',
      ok: true,
      detail: found
        ? `credentials accepted; app ${modal.appName} exists`
        : `credentials accepted; app ${modal.appName} is created by the first sandbox`,
    };
  } catch (error) {
    const reason = modalError(error, `looking up the Modal app ${modal.appName}`);
    return {
      check: 'modal',
      ok: false,
      detail: reason.message,
      fix: /credentials/.test(reason.message)
        ? 'create a token at modal.com → Settings → API Tokens and set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET'
        : "check this host's network (and MODAL_SERVER_URL when set)",
    };
  } finally {
    client.close();
  }
}

/** Two columns and a status mark; a red row's fix on the line below it. */
export function renderTable(rows: readonly DoctorRow[]): string {
  const width = Math.max(...rows.map((r) => r.check.length));
  return rows
    .map(
      (r) =>
        `${r.ok ? '✓' : '✗'} ${r.check.padEnd(width)}  ${r.detail}${r.ok || !r.fix ? '' : `\n  ${' '.repeat(width)}  fix: ${r.fix}`}`,
    )
    .join('\n');
}
