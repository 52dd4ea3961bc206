import js from '@eslint/js'
import tseslint from 'typescript-eslint'
import noImportCycles from './eslint-rules/no-import-cycles.js'

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', 'helm/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', URL: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['src/**/*.ts'],
    plugins: { local: { rules: { 'no-import-cycles': noImportCycles } } },
    rules: { 'local/no-import-cycles': 'error' },
  },
  {
    // The gateway reads the time from the one clock it is handed (tests hand a fake one);
    // the platform stand-in keeps its own.
    files: ['src/**/*.ts'],
    ignores: ['src/clock.ts', 'src/sandbox/**'],
    rules: {
      'no-restricted-syntax': [
        'error',
        { selector: "MemberExpression[object.name='Date'][property.name='now']", message: 'Read the time from the Clock handed in (src/clock.ts), not Date.now.' },
        { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: 'Read the time from the Clock handed in (src/clock.ts): new Date(clock.now()).' },
      ],
    },
  },
)
