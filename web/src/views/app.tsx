import { useEffect, useState } from 'preact/hooks';
import type { PageSignInProvider } from '../../../src/core/page-sign-in.ts';
import { api, ApiError } from '../api.ts';
import { InsightsPage } from './insights-page.tsx';
import { ListPage } from './list-page.tsx';
import { SessionPage } from './session-page.tsx';

type Route = { page: 'list' } | { page: 'session'; id: string } | { page: 'insights' };

function currentRoute(): Route {
  if (/^\/insights\/?$/.test(location.pathname)) return { page: 'insights' };
  const match = /^\/sessions\/([^/]+)\/?$/.exec(location.pathname);
  return match ? { page: 'session', id: decodeURIComponent(match[1]!) } : { page: 'list' };
}

/** Client-side navigation between the list and a session, without reloading the page. */
export function navigate(path: string): void {
  history.pushState(null, '', path);
  dispatchEvent(new PopStateEvent('popstate'));
}

export function App() {
  const [route, setRoute] = useState(currentRoute);
  const [access, setAccess] = useState<'checking' | 'ok' | 'ask'>('checking');
  const [providers, setProviders] = useState<PageSignInProvider[]>([]);
  const [required, setRequired] = useState(false);

  useEffect(() => {
    const onPop = () => setRoute(currentRoute());
    addEventListener('popstate', onPop);
    return () => removeEventListener('popstate', onPop);
  }, []);

  useEffect(() => {
    api.auth().then(
      (auth) => {
        setProviders(auth.providers ?? []);
        setRequired(auth.required);
        setAccess(auth.signedIn ? 'ok' : 'ask');
      },
      () => setAccess('ask'),
    );
    // Any API call that comes back 401 (the token changed, the cookie expired) asks again.
    const onDenied = () => setAccess('ask');
    addEventListener('patchbay:unauthorized', onDenied);
    return () => removeEventListener('patchbay:unauthorized', onDenied);
  }, []);

  return (
    <>
      <header class="top">
        <a
          class="brand"
          href="/"
          onClick={(e) => {
            e.preventDefault();
            navigate('/');
          }}
        >
          Patchbay
        </a>
        <span class="top-hint">
          <kbd>/</kbd> message · <kbd>1</kbd>–<kbd>4</kbd> tabs
        </span>
        {required && access === 'ok' && <SignOutButton onDone={() => setAccess('ask')} />}
      </header>
      {access === 'checking' && <p class="muted pad">Loading…</p>}
      {access === 'ask' && <TokenForm providers={providers} onDone={() => setAccess('ok')} />}
      {access === 'ok' &&
        (route.page === 'session' ? (
          <SessionPage key={route.id} id={route.id} />
        ) : route.page === 'insights' ? (
          <InsightsPage />
        ) : (
          <ListPage />
        ))}
    </>
  );
}

/** Ends this browser's session on the server (not only the cookie), then asks for the token again. */
function SignOutButton({ onDone }: { onDone: () => void }) {
  const [error, setError] = useState('');
  const signOut = async () => {
    setError('');
    try {
      await api.signOut();
      onDone();
    } catch (err) {
      setError(String((err as Error).message));
    }
  };
  return (
    <span class="sign-out">
      <button id="sign-out" type="button" onClick={signOut}>
        Sign out
      </button>
      {error && (
        <span class="error" role="alert">
          {error}
        </span>
      )}
    </span>
  );
}

/** Asks for PATCHBAY_API_TOKEN once; the server answers with an HttpOnly session cookie. */
function TokenForm({ onDone, providers }: { onDone: () => void; providers: readonly PageSignInProvider[] }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState('');
  const submit = async (event: Event) => {
    event.preventDefault();
    setError('');
    try {
      await api.signIn(token.trim());
      onDone();
    } catch (err) {
      setError(
        err instanceof ApiError && err.status === 401 ? 'That is not the API token.' : String((err as Error).message),
      );
    }
  };
  return (
    <form id="token-form" class="card token-form" onSubmit={submit}>
      <h1>Sign in</h1>
      <p>
        This Patchbay needs its API token (<code>PATCHBAY_API_TOKEN</code>). Signing in lasts until you sign out or it
        expires (12 hours unless <code>WEB_SESSION_HOURS</code> says otherwise).
      </p>
      <label for="token">API token</label>
      <input
        id="token"
        type="password"
        autocomplete="current-password"
        required
        value={token}
        onInput={(e) => setToken(e.currentTarget.value)}
        // biome-ignore lint/a11y/noAutofocus: the sign-in page has this one field, and typing the token is all there is to do there.
        autoFocus
      />
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <button type="submit">Sign in</button>
      {providers.map((p) => (
        <p key={p.url}>
          or{' '}
          <a class="sign-in-with" href={p.url}>
            sign in with {p.name}
          </a>
        </p>
      ))}
    </form>
  );
}
