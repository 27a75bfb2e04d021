import type { Logger } from 'pino';
import { PatchbayError } from '../../src/core/errors.ts';
import type { ModalSandboxLike } from './modal-client.ts';
import { describeSandboxEnd } from './modal-errors.ts';
import type { ModalExecOutput } from './modal-exec.ts';

/**
 * Whether a session's sandbox ended under its run. While commands run, the sandbox itself is
 * polled: the SDK keeps retrying calls to a task that is gone, so its death is seen here rather
 * than as a hang. Once it ended, `failure()` is the run-ending error and `ended` has resolved.
 */
export class SandboxEndWatch {
  /** Resolves with the reason once the sandbox ended, for a running command to race against. */
  readonly ended: Promise<string>;
  readonly #sandbox: ModalSandboxLike;
  readonly #intervalMs: number;
  readonly #log: Logger;
  #failure: PatchbayError | undefined;
  #resolveEnded: (reason: string) => void = () => undefined;
  #busy = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(sandbox: ModalSandboxLike, options: { intervalMs: number; log: Logger }) {
    this.#sandbox = sandbox;
    this.#intervalMs = options.intervalMs;
    this.#log = options.log;
    this.ended = new Promise<string>((resolve) => {
      this.#resolveEnded = resolve;
    });
  }

  /** The error that ends the run once the sandbox ended; undefined while it lives. */
  failure(): PatchbayError | undefined {
    return this.#failure;
  }

  /** Records that the sandbox ended (the first reason wins). */
  markEnded(reason: string): void {
    if (this.#failure) return;
    this.#failure = new PatchbayError(
      'sandbox_failed',
      `The Modal sandbox ${this.#sandbox.sandboxId} ended while this session was working in it: ${reason}. Send a message to resume: the session continues in a new sandbox from the sandbox's last snapshot.`,
    );
    this.#resolveEnded(reason);
    // The record keeps the sandbox's id: the next acquire takes its exit snapshot.
    this.#log.warn({ sandboxId: this.#sandbox.sandboxId, reason }, 'Modal sandbox ended under a run');
  }

  /**
   * Runs one command while the sandbox is watched. A command whose start, input or output failed
   * may have failed because the sandbox ended under it (its router is gone): that is what it then
   * throws, which a message resumes from, rather than what the SDK saw.
   */
  async during(command: (ended: Promise<string>) => Promise<ModalExecOutput>): Promise<ModalExecOutput> {
    this.#busy++;
    this.#start();
    try {
      const output = await command(this.ended).catch((error: unknown) => this.#explain(error));
      if (output.sandboxEnded) this.markEnded(output.sandboxEnded);
      return output;
    } finally {
      if (--this.#busy === 0) this.stop();
    }
  }

  /** Stops polling (until the next command). */
  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #start(): void {
    if (this.#timer || this.#failure) return;
    this.#timer = setInterval(() => {
      this.#sandbox.poll().then(
        (exit) => exit !== null && this.markEnded(describeSandboxEnd(exit)),
        () => undefined,
      );
    }, this.#intervalMs);
  }

  async #explain(error: unknown): Promise<never> {
    if (!this.#failure) {
      const exit = await this.#sandbox.poll().catch(() => null);
      if (exit !== null) this.markEnded(describeSandboxEnd(exit));
    }
    throw this.#failure ?? error;
  }
}
