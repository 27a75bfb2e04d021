/**
 * What the screenshot tool runs inside the sandbox, as one command: start the agent's server when
 * it names one (each command is a fresh sandbox process, so a server from an earlier call is
 * gone), wait until the URL answers, take the picture with headless Chromium, and print the PNG as
 * base64 on stdout (text, so it comes back through `exec` on every sandbox). Its inputs arrive as
 * environment variables (screenshotEnv), never spliced into the text. Chromium runs with
 * --no-sandbox: the sandbox around it is the isolation, and it allows no setuid helper.
 */
export const SCREENSHOT_SCRIPT = String.raw`
unset HTTP_PROXY HTTPS_PROXY http_proxy https_proxy ALL_PROXY all_proxy NO_PROXY no_proxy NODE_USE_ENV_PROXY
work=$(mktemp -d /tmp/patchbay-screenshot.XXXXXX) || exit 90
trap 'rm -rf "$work"' EXIT
browser=
for candidate in /usr/lib/chromium/chromium chromium chromium-browser google-chrome-stable google-chrome; do
  if command -v "$candidate" >/dev/null 2>&1; then browser=$(command -v "$candidate"); break; fi
done
if [ -z "$browser" ]; then
  echo "There is no Chromium in this sandbox (looked for chromium, chromium-browser and google-chrome)." >&2
  exit 91
fi
answers() {
  if command -v curl >/dev/null 2>&1; then curl -s -o /dev/null --max-time 2 "$SHOT_URL"; return; fi
  if command -v wget >/dev/null 2>&1; then wget -q -O /dev/null -T 2 -t 1 "$SHOT_URL"; [ $? -ne 4 ]; return; fi
  if command -v node >/dev/null 2>&1; then
    node -e 'fetch(process.argv[1]).then(() => process.exit(0), () => process.exit(1))' "$SHOT_URL"; return
  fi
  sleep 1
}
if [ -n "$SHOT_SERVER" ]; then
  sh -c "$SHOT_SERVER" >"$work/server.log" 2>&1 </dev/null &
  server=$!
fi
tries=0
until answers; do
  tries=$((tries + 1))
  if [ -n "$SHOT_SERVER" ] && ! kill -0 "$server" 2>/dev/null; then
    echo "The server command ended before $SHOT_URL answered. Its output:" >&2
    tail -c 2000 "$work/server.log" >&2
    exit 92
  fi
  if [ -z "$SHOT_SERVER" ] || [ "$tries" -ge $((SHOT_WAIT_SECONDS * 5)) ]; then
    echo "Nothing answers at $SHOT_URL." >&2
    if [ -n "$SHOT_SERVER" ]; then echo "The server's output:" >&2; tail -c 2000 "$work/server.log" >&2; fi
    exit 93
  fi
  sleep 0.2
done
"$browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-proxy-server --hide-scrollbars \
  --no-first-run --no-default-browser-check --disable-extensions --disable-background-networking --disable-sync \
  --mute-audio --user-data-dir="$work/profile" --screenshot="$work/shot.png" \
  --window-size="$SHOT_WIDTH,$SHOT_HEIGHT" --force-device-scale-factor=1 "$SHOT_URL" >"$work/browser.log" 2>&1
status=$?
if [ ! -s "$work/shot.png" ]; then
  echo "Chromium took no screenshot (exit $status). Its last output:" >&2
  grep -v -e dbus -e DBus "$work/browser.log" | tail -c 2000 >&2
  exit 94
fi
base64 "$work/shot.png" | tr -d '\n'
`;

/** The screenshot script's inputs. */
export function screenshotEnv(input: {
  url: string;
  width: number;
  height: number;
  server: string | undefined;
  waitSeconds: number;
}): Record<string, string> {
  return {
    SHOT_URL: input.url,
    SHOT_WIDTH: String(input.width),
    SHOT_HEIGHT: String(input.height),
    SHOT_SERVER: input.server ?? '',
    SHOT_WAIT_SECONDS: String(input.waitSeconds),
  };
}
