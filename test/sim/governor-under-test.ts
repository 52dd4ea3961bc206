import { newGovernor } from './new-governor.js'
import { oldGovernor } from './old-governor.js'
import type { GovernorFactory } from './gateway.js'

/** The governor the sweep drives: SIM_GOVERNOR=old drives the one of 4c03196. */
export const governorUnderTest: GovernorFactory = process.env.SIM_GOVERNOR === 'old' ? oldGovernor : newGovernor
