/**
 * Signing people in to the web page by another identity than the API token (GitHub sign-in). The
 * API owns the page's session cookie; an integration that has checked who a person is asks it for
 * the cookie, and offers its start route on the sign-in form.
 */
export type PageSessionIssuer = {
  /** Starts a server-side page session for `who` (say `github:octocat`); resolves to its `Set-Cookie` header value. */
  cookieFor(who: string): Promise<string>;
};

/** A way to sign in to the page that an integration offers: a label and the route that starts it. */
export type PageSignInProvider = { name: string; url: string };
