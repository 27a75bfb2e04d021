# The session's process host, run inside the sandbox as one long-lived command (python3 -, this text
# on stdin). Each sandbox command is a fresh process with its own loopback, so the processes that must
# outlive one command live here, in one network namespace: the agent's background processes (a dev
# server, a database, a watcher) and one headless Chromium that reaches them. Short commands talk to it
# over a unix socket in the workspace's .git (one JSON request, one JSON answer). Everything here runs
# with the sandbox's rights and limits; the host trusts none of its answers (they are parsed with zod).
import base64, fcntl, json, os, shutil, signal, socket, socketserver, subprocess, sys, threading, time

SOCKET = sys.argv[1]
MAX_PROCESSES = int(os.environ.get('PB_MAX_PROCESSES', '4'))
LOG_BYTES = 256 * 1024
PROFILE = '/tmp/patchbay-browser-' + os.environ.get('PB_SESSION_TAG', 'session')
PAGE_JS = None  # the host puts the page script here
processes = {}
lock = threading.Lock()
browser_lock = threading.Lock()
browser = None


def kill_group(pid):
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        if sig == signal.SIGTERM:
            time.sleep(0.5)


class Background:
    def __init__(self, pid_id, command, cwd):
        self.id, self.command, self.started = pid_id, command, time.time()
        self.log, self.total = bytearray(), 0
        self.popen = subprocess.Popen(['/bin/sh', '-c', command], cwd=cwd, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                                      env=dict(os.environ, PYTHONUNBUFFERED='1'))
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        for chunk in iter(lambda: self.popen.stdout.read1(65536), b''):
            with lock:
                self.log += chunk
                self.total += len(chunk)
                if len(self.log) > LOG_BYTES:
                    del self.log[:len(self.log) - LOG_BYTES]

    def output(self, since):
        with lock:
            first = self.total - len(self.log)
            start = max(since, first) - first
            return {'text': bytes(self.log[start:]).decode('utf-8', 'replace'), 'next': self.total,
                    'skipped': max(0, first - since)}

    def describe(self):
        code = self.popen.poll()
        return {'id': self.id, 'command': self.command, 'pid': self.popen.pid, 'running': code is None,
                'exitCode': code, 'seconds': round(time.time() - self.started)}


def port_answers(port):
    try:
        with socket.create_connection(('127.0.0.1', port), timeout=1):
            return True
    except OSError:
        return False


def start_process(req):
    running = [p for p in processes.values() if p.popen.poll() is None]
    if len(running) >= MAX_PROCESSES:
        raise Refusal('%d background processes run already (the most): stop one first' % MAX_PROCESSES)
    pid_id = 'p%d' % (len(processes) + 1)
    proc = Background(pid_id, req['command'], req.get('cwd') or '.')
    processes[pid_id] = proc
    port, deadline = req.get('port'), time.time() + req.get('waitSeconds', 30)
    while port and not port_answers(port):
        if proc.popen.poll() is not None or time.time() > deadline:
            out = proc.output(0)
            why = 'ended (exit %s)' % proc.popen.poll() if proc.popen.poll() is not None else 'did not open it in time'
            return dict(proc.describe(), waited=False, reason=why, output=out['text'][-4000:])
        time.sleep(0.2)
    time.sleep(0.3)
    return dict(proc.describe(), waited=bool(port), output=proc.output(0)['text'][-4000:])


def find_process(req):
    proc = processes.get(req.get('id'))
    if not proc:
        raise Refusal('no background process %s (process_list names them)' % req.get('id'))
    return proc


def stop_process(req):
    proc = find_process(req)
    if proc.popen.poll() is None:
        kill_group(proc.popen.pid)
        proc.popen.wait(5)
    return dict(proc.describe(), output=proc.output(max(0, proc.total - 4000))['text'])


class Refusal(Exception):
    pass


# Hosts Chromium calls on its own (updates, sign-in, network time) whatever its flags say: sent to a
# closed port instead of the egress proxy, so the session's refused hosts are the pages' only.
CHROMIUM_OWN_HOSTS = ['update.googleapis.com', 'accounts.google.com', 'clients2.google.com']


def proxy_flag(proxy):
    if not proxy:
        return '--no-proxy-server'
    relay = proxy.split('://', 1)[-1].rstrip('/')
    pac = ('function FindProxyForURL(url, host) { if (%s.indexOf(host) >= 0) return "PROXY 127.0.0.1:9"; '
           'return "PROXY %s"; }' % (json.dumps(CHROMIUM_OWN_HOSTS), relay))
    return '--proxy-pac-url=data:application/x-ns-proxy-autoconfig;base64,' + base64.b64encode(pac.encode()).decode()


def find_chromium():
    # Debian's /usr/bin/chromium is a wrapper that sources /etc/chromium.d, which a sandbox lacks.
    for candidate in ('/usr/lib/chromium/chromium', 'chromium', 'chromium-browser', 'google-chrome-stable', 'google-chrome'):
        found = shutil.which(candidate)
        if found:
            return found
    raise Refusal('There is no Chromium in this sandbox (looked for chromium, chromium-browser and google-chrome).')


class Cdp:
    """Chromium over --remote-debugging-pipe: NUL-separated JSON on descriptors 3 (in) and 4 (out)."""

    def __init__(self):
        to_child, self.out = os.pipe()
        self.inp, from_child = os.pipe()
        # Above 100, so moving them to 3 and 4 in the child never overwrites one with the other.
        in_fd, out_fd = [fcntl.fcntl(f, fcntl.F_DUPFD_CLOEXEC, 100) for f in (to_child, from_child)]

        def pipes():
            os.dup2(in_fd, 3)
            os.dup2(out_fd, 4)

        args = [find_chromium(), '--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage',
                '--no-first-run', '--no-default-browser-check', '--disable-extensions', '--mute-audio',
                '--disable-background-networking', '--disable-sync', '--hide-scrollbars',
                # No traffic of Chromium's own (updates, safe browsing, metrics): only the pages' shows.
                '--disable-component-update', '--disable-domain-reliability', '--no-pings', '--disable-breakpad',
                '--disable-client-side-phishing-detection', '--disable-default-apps', '--metrics-recording-only',
                '--disable-features=OptimizationHints,MediaRouter,Translate,AutofillServerCommunication,'
                'NetworkTimeServiceQuerying,LensOverlay,PreconnectToSearch',
                '--enable-features=SkipListAccountsWithoutGaiaCookies', '--no-service-autorun',
                '--force-device-scale-factor=1', '--window-size=1280,800', '--remote-debugging-pipe',
                '--user-data-dir=' + PROFILE, proxy_flag(os.environ.get('HTTP_PROXY')),
                'about:blank']
        with open('/tmp/patchbay-browser.log', 'ab') as log:
            self.popen = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                          close_fds=False, preexec_fn=pipes, start_new_session=True)
        for fd in (to_child, from_child, in_fd, out_fd):
            os.close(fd)
        self.next_id, self.waiting, self.answers = 0, {}, {}
        self.console, self.dialogs, self.inflight, self.loading = [], [], set(), False
        self.write_lock = threading.Lock()
        threading.Thread(target=self.read, daemon=True).start()
        targets = self.send('Target.getTargets', session=False)['targetInfos']
        page = next(t for t in targets if t['type'] == 'page')
        self.session = self.send('Target.attachToTarget', {'targetId': page['targetId'], 'flatten': True},
                                 session=False)['sessionId']
        for domain in ('Page', 'Runtime', 'Network', 'Log'):
            self.send(domain + '.enable')
        # The headless window's chrome would take from the page: the page itself is 1280x800.
        self.send('Emulation.setDeviceMetricsOverride', {'width': 1280, 'height': 800, 'deviceScaleFactor': 1,
                                                         'mobile': False})

    def read(self):
        buf = b''
        while True:
            chunk = os.read(self.inp, 1 << 16)
            if not chunk:
                break
            buf += chunk
            while b'\0' in buf:
                raw, buf = buf.split(b'\0', 1)
                self.dispatch(json.loads(raw))
        for event in list(self.waiting.values()):
            event.set()

    def dispatch(self, msg):
        if 'id' in msg:
            self.answers[msg['id']] = msg
            self.waiting.pop(msg['id'], threading.Event()).set()
            return
        method, params = msg.get('method'), msg.get('params', {})
        if method == 'Runtime.consoleAPICalled':
            text = ' '.join(str(a.get('value', a.get('description', ''))) for a in params.get('args', []))
            self.console.append({'kind': params.get('type'), 'text': text})
        elif method == 'Runtime.exceptionThrown':
            details = params.get('exceptionDetails', {})
            text = details.get('exception', {}).get('description') or details.get('text')
            self.console.append({'kind': 'pageerror', 'text': text})
        elif method == 'Log.entryAdded':
            entry = params.get('entry', {})
            if entry.get('url', '').endswith('/favicon.ico'):
                return  # Chromium's own request for an icon, not the page's
            self.console.append({'kind': entry.get('level'), 'text': entry.get('text', '') + ' ' + entry.get('url', '')})
        elif method == 'Network.requestWillBeSent':
            self.inflight.add(params['requestId'])
        elif method in ('Network.loadingFinished', 'Network.loadingFailed'):
            self.inflight.discard(params['requestId'])
            if method == 'Network.loadingFailed' and not params.get('canceled'):
                self.console.append({'kind': 'error', 'text': 'request failed: ' + params.get('errorText', '')})
        elif method == 'Network.responseReceived' and params['response']['status'] >= 400:
            response = params['response']
            if response['url'].endswith('/favicon.ico'):
                return
            self.console.append({'kind': 'error', 'text': '%s answered %d' % (response['url'], response['status'])})
        elif method == 'Page.javascriptDialogOpening':
            self.dialogs.append({'type': params.get('type'), 'message': params.get('message')})
            threading.Thread(target=self.send, args=('Page.handleJavaScriptDialog', {'accept': True}), daemon=True).start()
        elif method == 'Page.frameStartedLoading':
            self.loading = True
        elif method in ('Page.frameStoppedLoading', 'Page.loadEventFired'):
            self.loading = False

    def send(self, method, params=None, session=True, timeout=30):
        with self.write_lock:
            self.next_id += 1
            msg_id = self.next_id
            done = self.waiting[msg_id] = threading.Event()
            msg = {'id': msg_id, 'method': method, 'params': params or {}}
            if session:
                msg['sessionId'] = self.session
            os.write(self.out, json.dumps(msg).encode() + b'\0')
        if not done.wait(timeout):
            raise Refusal('Chromium did not answer %s in %ds' % (method, timeout))
        answer = self.answers.pop(msg_id, None)
        if answer is None:
            raise Refusal('Chromium ended. Its last output:\n' + browser_log())
        if 'error' in answer:
            raise Refusal('%s: %s' % (method, answer['error'].get('message')))
        return answer['result']

    def page(self, call):
        result = self.send('Runtime.evaluate', {'expression': PAGE_JS + '\n' + call, 'returnByValue': True,
                                                'awaitPromise': True})
        if 'exceptionDetails' in result:
            raise Refusal(result['exceptionDetails'].get('exception', {}).get('description', 'the page script failed'))
        value = result['result'].get('value')
        if isinstance(value, dict) and value.get('refused'):
            raise Refusal(value['refused'])
        return value

    def settle(self, limit=10):
        deadline, quiet = time.time() + limit, 0
        time.sleep(0.15)
        while time.time() < deadline and quiet < 3:
            quiet = quiet + 1 if not self.loading and not self.inflight else 0
            time.sleep(0.1)

    def state(self, console_from):
        info = self.page('__pb.snapshot()')
        errors = [c for c in self.console[console_from:] if c['kind'] in ('error', 'pageerror', 'assert')]
        dialogs, self.dialogs = self.dialogs, []
        return dict(info, dialogs=dialogs, newErrors=errors)


def browser_log():
    try:
        with open('/tmp/patchbay-browser.log', 'rb') as log:
            lines = log.read().decode('utf-8', 'replace').splitlines()
        return '\n'.join(line for line in lines if 'dbus' not in line.lower())[-2000:]
    except OSError:
        return '(none)'


def browser_action(req):
    global browser
    with browser_lock:
        if browser is None or browser.popen.poll() is not None:
            browser = Cdp()
        b, op, mark = browser, req['op'], len(browser.console)
        if op == 'open':
            nav = b.send('Page.navigate', {'url': req['url']})
            if nav.get('errorText'):
                raise Refusal('%s did not open: %s' % (req['url'], nav['errorText']))
            b.loading = True
            b.settle(30)
        elif op == 'click':
            box = b.page('__pb.point(%s)' % json.dumps(req['ref']))
            for kind in ('mouseMoved', 'mousePressed', 'mouseReleased'):
                b.send('Input.dispatchMouseEvent', {'type': kind, 'x': box['x'], 'y': box['y'], 'button': 'left',
                                                    'clickCount': 1})
            b.settle()
        elif op == 'type':
            b.page('__pb.focus(%s)' % json.dumps(req['ref']))
            b.send('Input.insertText', {'text': req['text']})
            if req.get('submit'):
                key = {'key': 'Enter', 'code': 'Enter', 'windowsVirtualKeyCode': 13, 'text': '\r'}
                b.send('Input.dispatchKeyEvent', dict(key, type='keyDown'))
                b.send('Input.dispatchKeyEvent', dict(key, type='keyUp'))
            b.settle()
        elif op == 'select':
            b.page('__pb.select(%s, %s)' % (json.dumps(req['ref']), json.dumps(req['values'])))
            b.settle()
        elif op == 'wait':
            wait_for(b, req)
        elif op == 'console':
            entries = b.console[req.get('since', 0):]
            return {'entries': entries[-200:], 'next': len(b.console)}
        elif op == 'screenshot':
            params = {'format': 'png'}
            if req.get('fullPage'):
                size = b.send('Page.getLayoutMetrics')['cssContentSize']
                # The whole page, at most 4096 pixels tall (the model's pictures have a size limit).
                params.update(captureBeyondViewport=True, clip={'x': 0, 'y': 0, 'scale': 1, 'width': min(size['width'], 1280),
                                                                 'height': min(max(size['height'], 1), 4096)})
            shot = b.send('Page.captureScreenshot', params)
            return dict(b.page('__pb.where()'), png=shot['data'])
        return b.state(mark)


def wait_for(b, req):
    deadline = time.time() + req.get('seconds', 10)
    while True:
        if req.get('networkIdle') and not b.inflight and not b.loading:
            return
        found = b.page('__pb.has(%s, %s)' % (json.dumps(req.get('text')), json.dumps(req.get('selector'))))
        if (req.get('text') or req.get('selector')) and found == (not req.get('gone')):
            return
        if time.time() > deadline:
            raise Refusal('waited %ss and the page never showed what was asked' % req.get('seconds', 10))
        time.sleep(0.2)


def shutdown():
    for proc in processes.values():
        if proc.popen.poll() is None:
            kill_group(proc.popen.pid)
    if browser is not None and browser.popen.poll() is None:
        kill_group(browser.popen.pid)
    try:
        os.unlink(SOCKET)
    except OSError:
        pass
    os._exit(0)


def handle(req):
    op = req.get('op')
    if op == 'ping':
        return {'pong': True}
    if op == 'start':
        return start_process(req)
    if op == 'output':
        proc = find_process(req)
        return dict(proc.describe(), **proc.output(req.get('since', 0)))
    if op == 'stop':
        return stop_process(req)
    if op == 'list':
        return {'processes': [p.describe() for p in processes.values()],
                'browser': browser is not None and browser.popen.poll() is None}
    if op == 'shutdown':
        threading.Thread(target=shutdown).start()
        return {'stopping': True}
    return browser_action(req)


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        try:
            answer = {'ok': True, 'result': handle(json.loads(self.rfile.readline()))}
        except Refusal as refusal:
            answer = {'ok': False, 'error': str(refusal)}
        except Exception as error:  # an answer for the model, never a dead host
            answer = {'ok': False, 'error': '%s: %s' % (type(error).__name__, error)}
        self.wfile.write(json.dumps(answer).encode() + b'\n')


if os.path.exists(SOCKET):
    os.unlink(SOCKET)
server = socketserver.ThreadingUnixStreamServer(SOCKET, Handler)
server.daemon_threads = True
signal.signal(signal.SIGTERM, lambda *_: shutdown())
server.serve_forever()
