/**
 * Environment that makes host-side git send HTTP Basic credentials to one git host only, through
 * git's `GIT_CONFIG_COUNT` settings: the secret never appears in argv (visible in the process
 * list), in a remote URL, or in any file. The setting is URL-scoped (`http.<url>.extraHeader`), so
 * a redirect or a submodule elsewhere never receives it.
 */
export function gitBasicAuthEnv(gitBaseUrl: string, username: string, password: string): Record<string, string> {
  const base = gitBaseUrl.replace(/\/+$/, '');
  const basic = Buffer.from(`${username}:${password}`, 'utf8').toString('base64');
  return {
    GIT_CONFIG_COUNT: '1',
    GIT_CONFIG_KEY_0: `http.${base}/.extraHeader`,
    GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}`,
  };
}
