/**
 * What changes from run to run of an identical failure: ANSI colours, ISO and clock timestamps,
 * durations, random seeds, ports, temporary paths, hex ids and PIDs. Each is replaced by a
 * placeholder and the lines are trimmed (blank ones dropped), so two outputs of the same failure
 * compare equal. The checks' repeated-failure stop and the agent's loop guard both compare this.
 */
export function maskLogNoise(log: string): string[] {
  return (
    log
      // biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI escape sequences start with ESC.
      .replace(/\x1b\[[0-9;?]*[ -/]*[@-~]/g, '')
      .replace(/\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?/g, '<time>')
      .replace(/\b\d{1,2}:\d{2}:\d{2}(\.\d+)?\b/g, '<time>')
      .replace(/\b\d+(\.\d+)?\s?(ns|µs|us|ms|s|sec|secs|seconds|m|min|minutes)\b/g, '<duration>')
      .replace(/\b(seed|random seed|randomly-seed|rng seed)(\s*[=:]\s*|\s+)-?\d+/gi, '$1=<seed>')
      .replace(/\b(localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1?\]|::1?):\d{2,5}\b/g, '$1:<port>')
      .replace(/\bport\s+\d{2,5}\b/gi, 'port <port>')
      .replace(/(\/(tmp|var\/folders|private\/var)\/)[^\s'"`:)]+/g, '$1<tmp>')
      .replace(/\b(pid|process)\s*[=:]?\s*\d+/gi, '$1 <pid>')
      .replace(/\b[0-9a-f]{7,64}\b/g, '<id>')
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean)
  );
}
