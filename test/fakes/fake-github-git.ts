import { spawn } from 'node:child_process';
import type { IncomingMessage, ServerResponse } from 'node:http';

const httpBackend = '/usr/lib/git-core/git-http-backend';

/**
 * Serves bare repositories with the real `git http-backend`, run as a CGI program, the way a git
 * host does. The caller has authenticated the request; `remoteUser` enables receive-pack; `env`
 * reaches the repository's hooks (what the pushing token may do). With `dropAnswer`, the request is
 * carried out (a push's refs updated) and the connection dropped instead of answering: the answer
 * is lost.
 */
export function serveGit(
  req: IncomingMessage,
  res: ServerResponse,
  options: {
    projectRoot: string;
    pathInfo: string;
    query: string;
    remoteUser: string;
    env?: Record<string, string>;
    dropAnswer?: boolean;
  },
): void {
  const env: Record<string, string> = {
    PATH: '/usr/local/bin:/usr/bin:/bin',
    HOME: '/nonexistent',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_PROJECT_ROOT: options.projectRoot,
    GIT_HTTP_EXPORT_ALL: '1',
    PATH_INFO: options.pathInfo,
    QUERY_STRING: options.query,
    REQUEST_METHOD: req.method ?? 'GET',
    REMOTE_USER: options.remoteUser,
    REMOTE_ADDR: req.socket.remoteAddress ?? '127.0.0.1',
    CONTENT_TYPE: req.headers['content-type'] ?? '',
    SERVER_PROTOCOL: 'HTTP/1.1',
    GATEWAY_INTERFACE: 'CGI/1.1',
    ...options.env,
  };
  if (req.headers['content-length']) env.CONTENT_LENGTH = req.headers['content-length'];
  if (req.headers['content-encoding']) env.HTTP_CONTENT_ENCODING = req.headers['content-encoding'];
  if (req.headers['git-protocol']) env.GIT_PROTOCOL = String(req.headers['git-protocol']);
  const child = spawn(httpBackend, [], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  req.pipe(child.stdin);
  let head = Buffer.alloc(0);
  let headersDone = false;
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  if (options.dropAnswer) {
    child.stdout.resume();
    child.on('close', () => res.socket?.destroy());
    return;
  }
  child.stdout.on('data', (chunk: Buffer) => {
    if (headersDone) {
      res.write(chunk);
      return;
    }
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf('\r\n\r\n');
    if (end < 0) return;
    headersDone = true;
    let status = 200;
    for (const line of head.subarray(0, end).toString('latin1').split('\r\n')) {
      const colon = line.indexOf(':');
      const name = line.slice(0, colon).trim();
      const value = line.slice(colon + 1).trim();
      if (name.toLowerCase() === 'status') status = Number(value.split(' ')[0]);
      else res.setHeader(name, value);
    }
    res.statusCode = status;
    res.write(head.subarray(end + 4));
  });
  child.on('close', (code) => {
    if (!headersDone) {
      res.statusCode = 500;
      res.end(`git http-backend failed (${code}): ${stderr}`);
      return;
    }
    res.end();
  });
}

/**
 * GitHub's pre-receive rule for workflow files: a push whose new commits add, change or delete a
 * file under `.github/workflows/` is refused unless the token has the `workflows` permission
 * (FAKE_GITHUB_WORKFLOWS=write). GitHub reports it as the ref's rejection reason; a hook's words
 * reach the pusher as `remote:` lines, with the same text.
 */
export const workflowsHook = `#!/bin/sh
[ "$FAKE_GITHUB_WORKFLOWS" = write ] && exit 0
zero=0000000000000000000000000000000000000000
while read old new ref; do
  [ "$new" = "$zero" ] && continue
  if [ "$old" = "$zero" ]; then commits=$(git rev-list "$new" --not --branches); else commits=$(git rev-list "$old..$new"); fi
  for c in $commits; do
    file=$(git diff-tree --root -r --no-commit-id --name-only "$c" | grep '^\\.github/workflows/' | head -n 1)
    if [ -n "$file" ]; then
      echo "refusing to allow a GitHub App to create or update workflow \\\`$file\\\` without \\\`workflows\\\` permission" >&2
      exit 1
    fi
  done
done
exit 0
`;
