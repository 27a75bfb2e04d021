import type { StoredEvent } from '../core/events.ts';

const frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/**
 * A live last line on a terminal: status, elapsed time, current step, tokens. Printed lines go
 * above it. On a pipe it stays silent and lines are printed plainly.
 */
export function createStatusLine(out: NodeJS.WriteStream) {
  const live = out.isTTY === true;
  const startedAt = Date.now();
  let status = 'queued';
  let step = '';
  let tokens = 0;
  let frame = 0;
  let paused = false;

  const render = () => {
    if (!live || paused) return;
    const elapsed = Math.round((Date.now() - startedAt) / 1000);
    const clock = `${Math.floor(elapsed / 60)}:${String(elapsed % 60).padStart(2, '0')}`;
    const parts = [status, clock, step && `step: ${step}`, tokens && `${(tokens / 1000).toFixed(1)}k tokens`].filter(
      Boolean,
    );
    out.write(`\r\x1b[K${frames[frame++ % frames.length]} ${parts.join(' · ')}`);
  };
  const timer = live ? setInterval(render, 250) : undefined;
  timer?.unref();

  return {
    print(line: string) {
      if (live) out.write('\r\x1b[K');
      out.write(`${line}\n`);
      render();
    },
    update({ event }: StoredEvent) {
      if (event.type === 'status-changed') status = event.to;
      if (event.type === 'tool-start') step = event.name;
      if (event.type === 'tool-end' || event.type === 'assistant-message') step = '';
      if (event.type === 'usage') tokens += event.inputTokens + event.outputTokens;
      render();
    },
    pause() {
      paused = true;
      if (live) out.write('\r\x1b[K');
    },
    resume() {
      paused = false;
      render();
    },
    stop() {
      if (timer) clearInterval(timer);
      if (live) out.write('\r\x1b[K');
    },
  };
}
