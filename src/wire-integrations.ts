import { contextFor, type IntegrationContext, type IntegrationModule } from '../integrations/integration-module.ts';
import type { Config } from './config.ts';
import { repoUrl } from './core/repo-ref.ts';

/**
 * Builds the integrations the config enables. Part of the composition root: each integration adds
 * one block here, reading only its own part of the config, and gets the context `contextFor` its
 * name (a database handle that refuses another integration's tables).
 */
export async function buildIntegrations(config: Config, context: IntegrationContext): Promise<IntegrationModule[]> {
  const modules: IntegrationModule[] = [];
  // Each integration (and its vendor SDK) is loaded only when configured: loading them all took
  // about half a second of every start, more on a busy host, before a restarted server could resume.
  // Sign in with Slack proves who opens a Slack person's "connect github" link (GitHub asks it first).
  const slackProof = config.slack?.oidc
    ? (await import('../integrations/slack/slack-oidc.ts')).createSlackIdentityProof({
        ...config.slack.oidc,
        apiUrl: config.slack.apiUrl,
        log: context.log.child({ integration: 'slack' }),
      })
    : undefined;
  const github = config.github
    ? await (await import('../integrations/github/github-module.ts')).createGitHubModule(
        config.github,
        contextFor(context, 'github'),
        slackProof ? [slackProof] : [],
      )
    : undefined;
  if (github) modules.push(github);
  if (config.slack) {
    const { createSlackModule } = await import('../integrations/slack/slack-module.ts');
    // Slack sessions name repos the way the GitHub integration parses them (GITHUB_GIT_URL), so its PRs and tokens apply.
    const gitUrl = config.github?.gitUrl ?? 'https://github.com';
    modules.push(
      createSlackModule({
        config: config.slack,
        context: contextFor(context, 'slack'),
        gitUrl,
        repoUrlFor: (owner, repo) => repoUrl(gitUrl, { owner, repo }),
        // Links people paste name that host (GitHub Enterprise, or github.com).
        repoHosts: [new URL(gitUrl).host],
        // Without Sign in with Slack a link could not be checked: Slack then says sign-in is not set up.
        ...(github?.signInLink && slackProof && { signInLink: github.signInLink }),
      }),
    );
  }
  if (config.linear) {
    const { createLinearModule } = await import('../integrations/linear/linear-module.ts');
    const { createSecretBox } = await import('../integrations/github/secret-box.ts');
    // Linear sessions name repos the way the GitHub integration parses them, so its PRs and tokens apply.
    const gitUrl = config.github?.gitUrl ?? 'https://github.com';
    const secretKey = config.linear.secretKey;
    modules.push(
      createLinearModule({
        config: config.linear,
        context: contextFor(context, 'linear'),
        repos: {
          gitUrl,
          repoUrl: (repo) => repoUrl(gitUrl, repo),
          installed: async () => (github ? github.installedRepos() : []),
        },
        ...(secretKey && { box: createSecretBox(secretKey) }),
      }),
    );
  }
  return modules;
}
