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
)
