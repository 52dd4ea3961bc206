import { it } from 'vitest'
import { benchMisses, benchShape } from './bench-shapes.js'

it('wide', async () => {
  const out: string[] = []
  for (let seed = Number(process.env.FROM ?? 41); seed <= Number(process.env.TO ?? 200); seed++) {
    const shape = benchShape(seed)
    const broken = await benchMisses(shape)
    if (broken.length > 0) out.push(`${seed}${shape.kind === 'crowded' ? 'c' : 'v'}${(shape.scenario.gatewayLate?.[0]?.[1] ?? 0) > 0 ? 'L' : ''}:${broken.map((b) => b.guarantee).join('+')}`)
  }
  console.log(`WIDE ${out.length} ${out.join(' ')}`)
}, 600_000)
