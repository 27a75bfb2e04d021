import { readFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import { openDatabase } from '../../db/database.ts';
import { createSecretBox } from '../../integrations/github/secret-box.ts';
import type { Config } from '../config.ts';
import { describeError, PatchbayError } from '../core/errors.ts';
import { sealSignIn } from '../engines/chatgpt-signin.ts';
import { deviceLogin } from '../engines/chatgpt-device-login.ts';
import { parseCodexAuthJson } from '../engines/chatgpt-tokens.ts';
import { createCodexSignInStore } from '../sessions/store/codex-signin-store.ts';

export type SignInCommand =
  | { action: 'codex-login' }
  | { action: 'codex-import'; file: string }
  | { action: 'codex-logout' }
  | { action: 'codex-status' };

/**
 * `patchbay engines codex-login | codex-import <auth.json> | codex-logout | codex-status`: the
 * installation's ChatGPT sign-in for Codex. Login runs Codex's device-code sign-in here (the person
 * opens a link anywhere and enters the code shown); import reads the auth.json `codex login` wrote on a workstation and
 * stores its tokens sealed with PATCHBAY_SECRET_KEY (the file can then be deleted); logout deletes
 * the stored sign-in (runs after it fail saying so); status says who is signed in and until when,
 * never a token. Exit code 0 on success, 1 on a refusal, with one line saying why.
 */
export async function runSignInCommand(
  command: SignInCommand,
  deps: { config: Config; log: Logger; out: NodeJS.WritableStream; signal?: AbortSignal; pollMs?: number },
): Promise<number> {
  const { config, out } = deps;
  const chatgpt = config.engines.chatgpt;
  if (!chatgpt) {
    out.write('Set CODEX_AUTH=chatgpt and PATCHBAY_SECRET_KEY first (docs/engines.md).\n');
    return 1;
  }
  const database = await openDatabase({
    ...(config.databaseUrl && { url: config.databaseUrl }),
    dataDir: config.dataDir,
    log: deps.log,
  });
  try {
    const store = createCodexSignInStore(database.db);
    switch (command.action) {
      case 'codex-login': {
        const tokens = await deviceLogin({
          issuer: chatgpt.authUrl,
          show: (url, code) =>
            out.write(`Open ${url} in a browser, sign in to ChatGPT and enter this code (valid 15 minutes): ${code}\n`),
          signal: deps.signal ?? AbortSignal.timeout(16 * 60_000),
          ...(deps.pollMs !== undefined && { sleep: () => wait(deps.pollMs ?? 0) }),
        });
        await store.put(sealSignIn(createSecretBox(chatgpt.secretKey), tokens));
        out.write(`Stored the ChatGPT sign-in of ${tokens.email ?? 'account'} ${tokens.accountId} for Codex.\n`);
        return 0;
      }
      case 'codex-import': {
        const tokens = parseCodexAuthJson(await readAuthFile(command.file));
        await store.put(sealSignIn(createSecretBox(chatgpt.secretKey), tokens));
        out.write(`Stored the ChatGPT sign-in of ${tokens.email ?? 'account'} ${tokens.accountId} for Codex.\n`);
        return 0;
      }
      case 'codex-logout':
        out.write(
          (await store.remove())
            ? 'Deleted the ChatGPT sign-in for Codex.\n'
            : 'There was no ChatGPT sign-in to delete.\n',
        );
        return 0;
      case 'codex-status': {
        const row = await store.read();
        out.write(`${row ? signInState(row) : 'No ChatGPT sign-in for Codex is stored.'}\n`);
        return row && !row.refusedReason ? 0 : 1;
      }
      default: {
        const _never: never = command;
        return _never;
      }
    }
  } catch (error) {
    out.write(`${describeError(error)}\n`);
    return 1;
  } finally {
    await database.close();
  }
}

/** A sign-in's state for people: account, email, expiry, refusal; never a token. Pure. */
export function signInState(row: {
  accountId: string;
  email: string | null;
  expiresAt: Date | null;
  refusedReason: string | null;
}): string {
  const who = `${row.email ?? 'an account'} (ChatGPT account ${row.accountId})`;
  if (row.refusedReason)
    return `The ChatGPT sign-in of ${who} no longer works: ${row.refusedReason}; import a new one.`;
  const until = row.expiresAt ? `; access token valid until ${row.expiresAt.toISOString()}, refreshed by Patchbay` : '';
  return `Signed in to ChatGPT as ${who}${until}.`;
}

async function readAuthFile(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    throw new PatchbayError(
      'invalid_input',
      `cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
    );
  }
}

const wait = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
