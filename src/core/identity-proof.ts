/**
 * Proof that the browser on a sign-in link belongs to the chat identity the link was made for,
 * before anything is attached to that identity (Sign in with Slack before GitHub's sign-in): a
 * forwarded link then proves the wrong person and attaches nothing. An integration that can prove
 * its people's identity offers one; the one that attaches accounts (GitHub) asks it by `source`.
 */
export type IdentityProof = {
  /** The actor source it proves (`slack`): actor keys `slack:<id>`. */
  source: string;
  /** A name for messages: `Slack`. */
  name: string;
  /** Where to send the browser to sign in; the provider comes back to `redirectUri` with `code` and `state`. */
  authorizeUrl(input: { state: string; redirectUri: string; nonce: string }): string;
  /**
   * The actor key of the person who signed in (`slack:U123`), from the provider's own answer to
   * the code. Throws when the provider refuses the code; must not log the code or the secret.
   */
  provenActor(input: { code: string; redirectUri: string; signal: AbortSignal }): Promise<string>;
};
