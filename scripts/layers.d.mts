import type { Linter } from 'eslint';

/** The layers of src/, bottom first: a file may import from its own layer and those below. */
export const LAYERS: readonly (readonly string[])[];
/** The ESLint config blocks that enforce LAYERS. */
export function layerRules(): Linter.Config[];
