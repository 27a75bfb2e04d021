import { createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { downloadFile, isAllowedHost } from '../../integrations/attachment-download.ts';
import { slackFileHosts } from '../../integrations/slack/slack-files.ts';
import { listenOnLoopback } from '../fakes/loopback.ts';

describe('files are fetched only from the service’s own hosts', () => {
  it.each([
    ['https://files.slack.com/files-pri/T1-F1/a.png', ['files.slack.com'], true],
    ['https://files.slack.com.evil.example/a.png', ['files.slack.com'], false],
    ['https://evil.example/files.slack.com/a.png', ['files.slack.com'], false],
    ['https://sub.files.slack.com/a.png', ['files.slack.com'], false],
    ['http://files.slack.com/a.png', ['files.slack.com'], false],
    ['https://user:pw@files.slack.com/a.png', ['files.slack.com'], false],
    ['https://files.slack.com:8443/a.png', ['files.slack.com'], false],
    [
      'https://github.com/user-attachments/assets/abc',
      ['github.com', 'private-user-images.githubusercontent.com'],
      true,
    ],
    [
      'https://private-user-images.githubusercontent.com/1/2.png?jwt=x',
      ['github.com', 'private-user-images.githubusercontent.com'],
      true,
    ],
    ['https://uploads.linear.app/a/b/c', ['uploads.linear.app'], true],
    ['https://linear.app/uploads/a', ['uploads.linear.app'], false],
    ['http://127.0.0.1:4000/f.png', ['127.0.0.1:4000'], true],
    ['http://127.0.0.1:4001/f.png', ['127.0.0.1:4000'], false],
    ['not a url', ['files.slack.com'], false],
    ['file:///etc/passwd', ['files.slack.com'], false],
  ])('%s on %j: %s', (url, hosts, allowed) => {
    expect(isAllowedHost(url, hosts)).toBe(allowed);
  });

  it('Slack serves files from files.slack.com, a proxy or fake from its own host', () => {
    expect(slackFileHosts('https://slack.com/api/')).toEqual(['files.slack.com']);
    expect(slackFileHosts('http://127.0.0.1:4000/api/')).toEqual(['127.0.0.1:4000']);
  });
});

describe('downloadFile', () => {
  let server: { port: number; close(): Promise<void> };
  let other: { port: number; close(): Promise<void> };
  const otherHits: string[] = [];
  const seenAuth: (string | undefined)[] = [];
  beforeAll(async () => {
    other = await listenOnLoopback(
      createServer((req, res) => {
        otherHits.push(req.url ?? '');
        res.end('x');
      }),
    );
    server = await listenOnLoopback(
      createServer((req, res) => {
        seenAuth.push(req.headers.authorization);
        if (req.url === '/away') return res.writeHead(302, { location: `http://127.0.0.1:${other.port}/x` }).end();
        if (req.url === '/here') return res.writeHead(302, { location: '/file' }).end();
        if (req.url === '/file') return res.end(Buffer.from('0123456789'));
        if (req.url === '/endless') {
          // No content-length: the cap applies while the body streams.
          res.writeHead(200, { 'content-type': 'image/png' });
          const timer = setInterval(() => res.write(Buffer.alloc(1024)), 1);
          res.on('close', () => clearInterval(timer));
          return;
        }
        res.writeHead(404).end();
      }),
    );
  });
  afterAll(async () => {
    await server.close();
    await other.close();
  });
  const options = () => ({
    allowedHosts: [`127.0.0.1:${server.port}`],
    authorization: 'Bearer xoxb-secret',
    maxBytes: 4096,
    signal: AbortSignal.timeout(10_000),
  });
  const link = (path: string) => ({
    sourceKey: `k${path}`,
    name: 'f.png',
    url: `http://127.0.0.1:${server.port}${path}`,
  });

  it('follows a redirect on the same host, with the token', async () => {
    const got = await downloadFile(link('/here'), options());
    expect(got.kind === 'file' && Buffer.from(got.file.bytes).toString()).toBe('0123456789');
    expect(seenAuth.slice(-2)).toEqual(['Bearer xoxb-secret', 'Bearer xoxb-secret']);
  });

  it('follows no redirect to another host', async () => {
    const got = await downloadFile(link('/away'), options());
    expect(got).toMatchObject({ kind: 'refused', reason: expect.stringContaining('it is not on') });
    expect(otherHits).toEqual([]);
  });

  it('stops reading once more than maxBytes arrived', async () => {
    const got = await downloadFile(link('/endless'), options());
    expect(got).toEqual({ kind: 'refused', name: 'f.png', reason: 'it is larger than the 4 KB limit' });
  });

  it('reports a missing file as a refusal', async () => {
    expect(await downloadFile(link('/gone'), options())).toEqual({
      kind: 'refused',
      name: 'f.png',
      reason: 'its host answered 404',
    });
  });
});
