import { useState } from 'preact/hooks';
import { describeError } from './messages.js';
import { signIn, type Session } from './session.js';
import { startMeasure } from './timing.js';

interface Props {
  onSignedIn: (session: Session) => void;
  /** Why the user is here again (a refused key, a sign-out), shown until they try. */
  notice: string | null;
}

export function SignIn({ onSignedIn, notice }: Props) {
  const [key, setKey] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(notice);

  const submit = async (event: Event) => {
    event.preventDefault();
    const apiKey = key.trim();
    if (apiKey === '') return setError('Enter an API key.');
    startMeasure('dashboard:first-rows');
    setBusy(true);
    setError(null);
    try {
      onSignedIn(await signIn(apiKey));
    } catch (err) {
      setError(describeError(err));
      setBusy(false);
    }
  };

  return (
    <main class="sign-in">
      <h1>Pet Store inventory</h1>
      <p>Sign in with an API key to see and adjust stock counts.</p>
      <form onSubmit={(event) => void submit(event)}>
        <label for="api-key">API key</label>
        <input
          id="api-key"
          type="password"
          autocomplete="off"
          spellcheck={false}
          value={key}
          onInput={(event) => setKey(event.currentTarget.value)}
          aria-describedby="api-key-help"
          aria-invalid={error !== null}
          required
        />
        <p id="api-key-help" class="help">
          The key stays in this tab only, until you sign out or close it.
        </p>
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      <div role="alert" class="alert">
        {error}
      </div>
    </main>
  );
}
