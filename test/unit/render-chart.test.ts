/**
 * The chart tests' renderer (test/helpers/render-chart.ts and go-template/): the subset of
 * Go templates and Sprig the chart uses, as helm runs it, and a failure on anything else.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it, expect } from 'vitest'
import { mergeValues, renderChart, renderString, TemplateError } from '../helpers/render-chart.js'
import { install } from '../helpers/chart-manifests.js'

describe('the test renderer (subset of Go templates)', () => {
  it('trims whitespace at {{- and -}} like Go', () => {
    expect(renderString('a  \n  {{- "b" -}}  \n  c', {})).toBe('abc')
    expect(renderString('a {{/* comment */}} b', {})).toBe('a  b')
  })

  it('evaluates if / else if / else, with and range (maps in key order)', () => {
    const src = '{{ if .a }}A{{ else if .b }}B{{ else }}C{{ end }}'
    expect(renderString(src, { a: 1 })).toBe('A')
    expect(renderString(src, { b: 'x' })).toBe('B')
    expect(renderString(src, { a: 0, b: '' })).toBe('C')
    expect(renderString('{{ with .m }}{{ .x }}{{ end }}', { m: { x: 'y' } })).toBe('y')
    expect(renderString('{{ range $k, $v := .m }}{{ $k }}={{ $v }};{{ end }}', { m: { b: 2, a: 1 } })).toBe('a=1;b=2;')
    expect(renderString('{{ range .l }}[{{ . }}]{{ else }}none{{ end }}', { l: [] })).toBe('none')
  })

  it('includes defines and pipes through the functions the chart uses', () => {
    const helpers = '{{- define "n" -}}{{ .name | default "dflt" | trunc 3 }}{{- end }}'
    expect(renderString('{{ include "n" . | quote }}', {}, helpers)).toBe('"dfl"')
    expect(renderString('x:{{ toYaml .v | nindent 2 }}', { v: { b: 1, a: [1] } })).toBe('x:\n  a:\n    - 1\n  b: 1')
    expect(renderString('{{ printf "%s-%v" .a .b }}', { a: 'x', b: 8080 })).toBe('x-8080')
  })

  it('prints values as helm does', () => {
    expect(renderString('{{ .n }}', { n: 1000000 })).toBe('1e+06')
    expect(renderString('[{{ .missing }}]', {})).toBe('[]')
    expect(renderString('{{ printf "%s" .n }}', { n: 1 })).toBe('%!s(float64=1)')
  })

  it('reads chart files with .Files.Get, as helm does (not templates, "" for none)', () => {
    const files = install({ values: { monitoring: { dashboard: { enabled: true } } } })
    expect(files.files['dashboard-configmap.yaml']).toContain('"uid": "report-gateway"')
    const data = { Files: { Get: (name: unknown) => (name === 'a.txt' ? 'A' : '') } }
    expect(renderString('[{{ .Files.Get "a.txt" }}][{{ .Files.Get "b.txt" }}]', data)).toBe('[A][]')
    expect(renderString('{{ "a.txt" | .Files.Get | quote }}', data)).toBe('"A"')
  })

  it('runs add, join, deepCopy and set like Sprig', () => {
    expect(renderString('{{ add 5 10 .n }}', { n: 5 })).toBe('20')
    expect(renderString('{{ join "," .l }}', { l: [101, 102] })).toBe('101,102')
    const data = { m: { a: 1 } }
    expect(renderString('{{ $c := deepCopy .m }}{{ $_ := set $c "b" "x" }}{{ toYaml $c }}|{{ toYaml .m }}', data)).toBe('a: 1\nb: x|a: 1')
    expect(data.m).toEqual({ a: 1 })
  })

  it('runs mul, hasSuffix, kindIs and dict like Sprig, a dict filled by set through include', () => {
    expect(renderString('{{ mul 3 "20" .n }}', { n: 1000 })).toBe('60000')
    expect(renderString('{{ hasSuffix "ms" "250ms" }} {{ hasSuffix "ms" "2m" }}', {})).toBe('true false')
    expect(renderString('{{ kindIs "string" .s }} {{ kindIs "string" .n }} {{ kindIs "float64" .n }}', { s: '1s', n: 1 })).toBe('true false true')
    const helpers = '{{- define "twice" -}}{{- $_ := set .into "v" (mul .v 2) -}}{{- end }}'
    expect(renderString('{{ $d := dict "v" 21 }}{{ include "twice" (dict "v" $d.v "into" $d) }}{{ eq $d.v 42 }}', {}, helpers)).toBe('true')
  })

  it('runs lower, trimPrefix, regexMatch and regexFind like Sprig, and refuses a pattern RE2 and JavaScript read apart', () => {
    expect(renderString('{{ lower .s }} {{ trimPrefix "https://" .u }} {{ trimPrefix "x" "abc" }}', { s: 'Hooks.EXAMPLE', u: 'https://a.b' })).toBe('hooks.example a.b abc')
    expect(renderString('{{ regexMatch "^https?://[a-z.]+(:[0-9]*)?([/?#]|$)" .u }} {{ regexMatch "^[0-9]+$" .u }}', { u: 'http://a.b:80/x' })).toBe('true false')
    expect(renderString('[{{ regexFind "^https?://[a-z.]+" .u }}] [{{ regexFind "^ftp:" .u }}]', { u: 'https://a.b/x' })).toBe('[https://a.b] []')
    expect(() => renderString('{{ regexMatch "(?i)^a" "A" }}', {})).toThrow(/outside what the test renderer reads as RE2 does/)
    expect(() => renderString('{{ regexMatch "^a(?=b)" "ab" }}', {})).toThrow(/outside what the test renderer reads as RE2 does/)
  })

  it('runs and and or like Go: a missing value decides as false', () => {
    expect(renderString('{{ if and .missing true }}yes{{ else }}no{{ end }} {{ if or .missing .m.none }}yes{{ else }}no{{ end }} {{ and 1 .missing }} {{ or .missing 2 }}', { m: {} })).toBe('no no  2')
  })

  it("runs hasKey like Sprig (a key held as null is held), and keeps a null over no value as helm's values merge does", () => {
    expect(renderString('{{ hasKey .m "a" }} {{ hasKey .m "b" }} {{ hasKey .m "c" }}', { m: { a: null, b: 0 } })).toBe('true true false')
    expect(mergeValues({ a: { x: 1 } }, { a: { x: null, y: null } })).toEqual({ a: { y: null } })
  })

  it('fails on what helm fails on, and on anything outside the subset', () => {
    expect(() => renderString('{{ .a.b }}', {})).toThrow(/nil pointer/)
    expect(() => renderString('{{ required "need x" .x }}', {})).toThrow(TemplateError)
    expect(() => renderString('{{ if .x }}{{ fail "no x here" }}{{ end }}', { x: 1 })).toThrow('no x here')
    expect(renderString('{{ if .x }}{{ fail "no x here" }}{{ end }}ok', {})).toBe('ok')
    expect(() => renderString('{{ lookup "v1" "Secret" "ns" "n" }}', {})).toThrow(/not supported/)
    expect(() => renderString('{{ if .a }}', {})).toThrow(/without end/)
  })

  it('renders a template file, a define and values.yaml as they are now, after each changed since the last render', () => {
    const chart = mkdtempSync(join(tmpdir(), 'rgw-render-'))
    try {
      mkdirSync(join(chart, 'templates'))
      writeFileSync(join(chart, 'Chart.yaml'), 'apiVersion: v2\nname: c\nversion: 0.1.0\n')
      writeFileSync(join(chart, 'values.yaml'), 'x: 1\n')
      writeFileSync(join(chart, 'values.schema.json'), '{}')
      const write = (helper: string, data: string) => {
        writeFileSync(join(chart, 'templates', '_helpers.tpl'), `{{- define "c.name" -}}${helper}{{- end -}}`)
        writeFileSync(join(chart, 'templates', 'cm.yaml'), `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ include "c.name" . }}\ndata:\n  ${data}: "{{ .Values.x }}"\n`)
      }
      const rendered = () => renderChart(chart).manifests[0] as unknown as { metadata: { name: string }; data: Record<string, string> }
      write('first', 'a')
      expect(rendered()).toMatchObject({ metadata: { name: 'first' }, data: { a: '1' } })
      write('second', 'b')
      writeFileSync(join(chart, 'values.yaml'), 'x: 2\n')
      expect(rendered()).toMatchObject({ metadata: { name: 'second' }, data: { b: '2' } })
    } finally {
      rmSync(chart, { recursive: true, force: true })
    }
  })
})
