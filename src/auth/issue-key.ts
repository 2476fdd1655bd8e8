import { generateApiKey, type ApiKeyRecord, type Environment, type Scope } from '../domain/api-key.js';
import type { ApiKeys } from '../store/store.js';

/** Creates and stores a new key; the returned key is the only copy there will ever be: only its hash is stored. */
export async function issueApiKey(
  store: Pick<ApiKeys, 'insertApiKey'>,
  input: { name: string; environment: Environment; scopes: Scope[]; expiresAt: Date | null },
): Promise<{ key: string; record: ApiKeyRecord }> {
  const issued = generateApiKey(input);
  await store.insertApiKey(issued.record);
  return issued;
}
