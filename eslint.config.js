// @ts-check
// Lint for a CLI that reads untrusted JSON and deletes files: type-aware rules that catch lost
// promises, unchecked `any` and non-exhaustive switches, plus the house rules (only cli.ts exits,
// lines of at most 120 columns). Prettier owns the layout of code; `max-len` is here for what
// Prettier never wraps: comments. Run `npm run lint`; `node scripts/lint-report.mjs` counts findings.
import { fileURLToPath } from 'node:url';
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default defineConfig(
  // test/fixtures holds generated boards and captured data, not code we maintain.
  { ignores: ['dist/', 'node_modules/', 'test-artifacts/', 'test/fixtures/', 'coverage/'] },
  { linterOptions: { reportUnusedDisableDirectives: 'error' } },
  js.configs.recommended,
  // Includes no-floating-promises, no-misused-promises, await-thenable, only-throw-error and the
  // no-unsafe-* family: the value parsed from a session file or config is `unknown` until checked.
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      globals: { ...globals.node },
      // A tsconfig that also covers test/ (tsconfig.json is what the build compiles, without tests).
      parserOptions: {
        project: './scripts/tsconfig.lint.json',
        tsconfigRootDir: fileURLToPath(new URL('.', import.meta.url)),
      },
    },
    rules: {
      // A new Reason or LineFormat must not fall silently through a switch; a `default` that says
      // what happens to the rest counts as handling it.
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      // Type-only imports vanish from the emitted JS: keeps `--help` from loading modules it does not use.
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-import-type-side-effects': 'error',
      // `return promise` inside try skips the catch and finally cleanup (a lock, a temp file).
      '@typescript-eslint/return-await': ['error', 'in-try-catch'],
      // A rejection value is whatever was thrown: `unknown`, checked before use.
      '@typescript-eslint/use-unknown-in-catch-callback-variable': 'error',
      eqeqeq: ['error', 'smart'],
      // `_name` marks a parameter a callback signature requires; `{ omitted, ...rest }` drops a key.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // Off: commands implement an `async run()` contract and some have nothing to await; the
      // hazards (a promise nobody awaits or catches) are no-floating-promises and no-misused-promises.
      '@typescript-eslint/require-await': 'off',
      // Prettier wraps code to 120 columns but never comments, string literals, template literals,
      // regexps or URLs. Comments are wrapped by hand; a long string is written as a concatenation of
      // pieces broken after a space or a '>' (the value is the same; goldens compare the output).
      // Exempt: a template literal whose interpolations leave no such break within 120 columns
      // (33 lines in src/, HTML rows and messages with nested conditionals), regexps and URLs.
      'max-len': [
        'error',
        {
          code: 120,
          tabWidth: 2,
          ignoreUrls: true,
          ignoreStrings: false,
          ignoreTemplateLiterals: true,
          ignoreRegExpLiterals: true,
        },
      ],
    },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/cli.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        {
          object: 'process',
          property: 'exit',
          message: 'Only src/cli.ts exits: throw a GuardError with an exit code.',
        },
      ],
    },
  },
  {
    // The product writes through process.stdout and pino; benchmarks, tests and scripts may print.
    files: ['src/**/*.ts'],
    rules: { 'no-console': 'error' },
  },
  {
    files: ['test/**/*.ts'],
    // Off in tests only: tests JSON.parse the CLI's own output and assert on it with expect();
    // typing every parsed report (or writing `any` for it) would add casts, not checks; these rules stay
    // on for src/ and bench/.
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  // Plain JavaScript (scripts, measuring helpers) is not in the TypeScript program.
  { files: ['**/*.js', '**/*.mjs', '**/*.cjs'], extends: [tseslint.configs.disableTypeChecked] },
);
