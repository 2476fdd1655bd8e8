import { useEffect, useState } from 'preact/hooks';
import { InventoryPage } from './inventory-page.js';
import { describeError } from './messages.js';
import { forgetKey, isKeyRefused, signIn, storedKey, type Session } from './session.js';
import { SignIn } from './sign-in.js';
import { startMeasure } from './timing.js';

/** Signed in or not: a key kept in this tab signs in again by itself on reload. */
export function App() {
  const [session, setSession] = useState<Session | null>(null);
  const [restoring, setRestoring] = useState(() => storedKey() !== null);
  const [notice, setNotice] = useState<string | null>(null);

  useEffect(() => {
    const key = storedKey();
    if (key === null) return;
    startMeasure('dashboard:first-rows');
    signIn(key)
      .then(setSession, (error: unknown) => {
        // Only a refused key is forgotten; with the service out of reach, a reload tries it again.
        if (isKeyRefused(error)) forgetKey();
        setNotice(describeError(error));
      })
      .finally(() => setRestoring(false));
  }, []);

  const signOut = (why: string | null) => {
    forgetKey();
    setNotice(why);
    setSession(null);
  };

  if (restoring) return <p class="loading" role="status">Signing in…</p>;
  if (!session) return <SignIn onSignedIn={setSession} notice={notice} />;
  return <InventoryPage session={session} onSignOut={signOut} />;
}
