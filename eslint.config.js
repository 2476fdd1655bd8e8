import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { layerRules } from './scripts/layers.mjs';

export default tseslint.config(
  { ignores: ['node_modules/', 'data/', 'dist/', 'bench/results/', 'clients/typescript/dist/', 'clients/typescript/src/generated/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: { allowDefaultProject: ['eslint.config.js', 'bin/*', 'scripts/*.mjs', 'clients/typescript/scripts/*.mjs'] }, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        // node:test runs these itself; awaiting them is not needed.
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite'] }] },
      ],
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      // Fastify hooks are async by contract even when they await nothing.
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    files: ['bin/*', 'scripts/*.mjs', 'clients/typescript/scripts/*.mjs', 'eslint.config.js'],
    ...tseslint.configs.disableTypeChecked,
  },
  // The layers of src/ point one way (docs/architecture.md): an import that runs back up fails the lint.
  ...layerRules(),
);
