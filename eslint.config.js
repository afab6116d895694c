// Lint rules (`npm run lint`): ESLint's and typescript-eslint's recommended sets (syntax only,
// no type information, so a run takes seconds), with the few changes the code's own habits
// call for. Formatting is prettier's job (`npm run format`), never a lint rule.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'docs/dist/', 'node_modules/', 'demo-output/', 'test-output/', 'bench/gpu-machine/.prepared/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.js', '**/*.mjs'],
    rules: {
      // tsc's noUnusedLocals / noUnusedParameters already refuse these; `_`-names mark deliberate ones.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
      // `cond ? a() : b()` as a statement is the code's idiom for a two-way call.
      '@typescript-eslint/no-unused-expressions': ['error', { allowTernary: true, allowShortCircuit: true }],
    },
  },
  // The two plain-JS entry points (bin/, scripts/run-tests.mjs) run in Node; TypeScript files
  // leave undefined names to tsc.
  { files: ['**/*.js', '**/*.mjs'], languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly' } } },
  // Tests and benchmarks read JSON a child process printed; `any` there is a typed-enough peek.
  { files: ['**/*.test.ts', 'bench/**/*.ts'], rules: { '@typescript-eslint/no-explicit-any': 'off' } },
);
