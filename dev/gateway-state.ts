import type { GatewayState } from '../src/picoclaw/gateway.js';

/**
 * Gateway probes for in-process passes (tests, benchmarks, the kill child): no gateway running (an offline
 * pass), or one ready (an online pass).
 */
export const downGateway = async (): Promise<GatewayState> => ({
  state: 'down',
  reason: 'test',
  pid: null,
  pidFile: 'absent',
  alive: false,
  host: '127.0.0.1',
  port: 1,
  ready: null,
  health: null,
  healthPidMatches: null,
});

export const readyGateway = async (): Promise<GatewayState> => ({
  ...(await downGateway()),
  state: 'ready',
  reason: 'test: ready',
  alive: true,
});
