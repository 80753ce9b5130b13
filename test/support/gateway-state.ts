/** Gateway probes for in-process passes: dev/gateway-state.ts (shared with the benchmarks and the kill child). */
export { downGateway, readyGateway } from '../../dev/gateway-state.js';
