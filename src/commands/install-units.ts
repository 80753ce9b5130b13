import { chmodSync, chownSync, existsSync, mkdirSync, realpathSync, statSync, type Stats } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ExitCode, GuardError, errnoCode } from '../errors.js';
import { loadGuardConfig } from '../guard-config.js';
import { findVcgencmd } from '../health/vcgencmd.js';
import { writeFileAtomic } from '../io/atomic.js';
import { isLoopback } from '../daemon/server.js';
import { parseMetricsConfig, parseServerConfig } from '../daemon/settings.js';
import {
  GUARD_UNIT,
  allowedDevices,
  outermost,
  readGroups,
  lookupUser,
  readPasswd,
  renderUnits,
  underHomeDirs,
  type UnitValues,
} from '../install/units.js';
import { guardVersion } from '../version.js';
import { homeFromOpts } from './common.js';
import { escapeControl, layout, outputWidth } from './format.js';

/**
 * `picoclaw-guard install-units [--dest DIR] [--user NAME] [--gateway-unit NAME] [--home DIR] [--dry-run]`
 *
 * Writes the sidecar unit, the pre-start unit and the gateway drop-in with the paths of
 * this Node (process.execPath) and this install (the CLI's real path), running as the
 * user that owns the PicoClaw home, then prints the two systemctl commands to run.
 * It also creates the folders outside the home that the units make writable (the archive
 * and textfile folders), owned by that user: systemd silently skips a `ReadWritePaths=-DIR`
 * that does not exist when the unit starts, and the guard then meets a read-only file
 * system there. --dry-run prints the units (and the folders to create) instead of writing
 * them. Nothing is started or enabled.
 * Exit 0 written (or printed), 2 bad option or no PicoClaw home, 1 cannot write.
 */
function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** The gateway answers on loopback unless its config (or PID file) says otherwise. */
function gatewayOnLoopback(host: string): boolean {
  return host === '' || isLoopback(host);
}

interface WritableDir {
  path: string;
  what: string;
  /** The archive holds conversations: not for others. node_exporter (another user) reads the textfile folder. */
  mode: number;
}

interface Owner {
  name: string;
  group: string | null;
  uid: number | null;
  gid: number | null;
}

function writableBy(st: Stats, o: Owner): boolean {
  if (st.uid === o.uid) return (st.mode & 0o200) !== 0;
  if (st.gid === o.gid) return (st.mode & 0o020) !== 0;
  return (st.mode & 0o002) !== 0;
}

/** Create each missing folder with its owner and mode, or say what to run; a folder that exists is never changed. */
function prepareDirs(
  dirs: WritableDir[],
  o: Owner,
  dryRun: boolean,
  sudo: string,
  out: string[],
  notes: string[],
): void {
  for (const d of dirs) {
    const mode = d.mode.toString(8).padStart(4, '0');
    const how = `${sudo}install -d -o ${o.name}${o.group ? ` -g ${o.group}` : ''} -m ${mode} ${d.path}`;
    let st: Stats | null = null;
    try {
      st = statSync(d.path);
    } catch (err) {
      if (errnoCode(err) !== 'ENOENT') {
        notes.push(`note: cannot check ${d.path} (${d.what}): ${errnoCode(err) ?? String(err)}`);
        continue;
      }
    }
    if (st) {
      if (!st.isDirectory()) notes.push(`note: ${d.path} (${d.what}) is not a folder: the guard cannot write there`);
      else if (o.uid !== null && !writableBy(st, o))
        notes.push(
          `note: ${d.path} (${d.what}) exists but ${o.name} cannot write it; give it to ` +
            `${o.name}: ${sudo}chown ${o.name} ${d.path}`,
        );
      continue;
    }
    if (dryRun || o.uid === null || o.gid === null) {
      notes.push(
        `note: ${d.path} (${d.what}) does not exist and systemd skips a missing ReadWritePaths= folder; ` +
          `${dryRun ? 'without --dry-run it is created, or run' : 'create it'}: ${how}`,
      );
      continue;
    }
    try {
      mkdirSync(d.path, { recursive: true, mode: d.mode });
      chownSync(d.path, o.uid, o.gid);
      chmodSync(d.path, d.mode);
      out.push(`created ${d.path} (${d.what}), owner ${o.name}, mode ${mode}`);
    } catch (err) {
      notes.push(
        `note: cannot create ${d.path} (${d.what}) for ${o.name}: ${errnoCode(err) ?? String(err)}; create it: ${how}`,
      );
    }
  }
}

export async function run(opts: Record<string, unknown>): Promise<number> {
  const passwd = readPasswd();
  const groups = readGroups();
  // Under sudo, ~ is root's: without --home or $PICOCLAW_HOME, look in the home folder of
  // --user (else of the user who ran sudo), where PicoClaw keeps ~/.picoclaw.
  const owner0 = str(opts.user) ?? str(process.env.SUDO_USER);
  const ownerDir = owner0 ? passwd.find((p) => p.name === owner0)?.dir : undefined;
  const homeGuess = !str(opts.home) && !process.env.PICOCLAW_HOME && ownerDir ? join(ownerDir, '.picoclaw') : undefined;
  const home = homeFromOpts(homeGuess ? { ...opts, home: homeGuess } : opts);
  const homeDir = realpathSync(home.home);

  let user = str(opts.user);
  const owner = statSync(homeDir).uid;
  if (!user) {
    const entry = passwd.find((p) => p.uid === owner);
    if (!entry) {
      throw new GuardError(`the PicoClaw home ${homeDir} belongs to uid ${owner}, which has no name in /etc/passwd`, {
        exitCode: ExitCode.USAGE,
        hint: 'pass --user <name> (the user the gateway runs as)',
      });
    }
    if (entry.uid === 0) {
      throw new GuardError(`the PicoClaw home ${homeDir} belongs to root: the guard should not run as root`, {
        exitCode: ExitCode.USAGE,
        hint:
          'run the gateway as an unprivileged user and chown its home to it; or pass ' +
          '--user root to accept the risk',
      });
    }
    user = entry.name;
  }
  if (user === 'nobody') {
    // systemd warns "Special user nobody configured, this is not safe!": nobody owns files of other services.
    throw new GuardError(
      'the guard should not run as nobody (systemd calls it unsafe: it is shared by unrelated services)',
      { exitCode: ExitCode.USAGE, hint: 'pass --user <the user the gateway runs as>' },
    );
  }
  // Through NSS, as systemd resolves User=: a user it does not know would fail the unit at every start.
  const nss = passwd.find((p) => p.name === user) ?? lookupUser(user);
  if (nss === 'absent')
    throw new GuardError(`there is no user ${user} on this system (getent passwd ${user} finds none)`, {
      exitCode: ExitCode.USAGE,
      hint: 'pass --user <the user the gateway runs as>, or create that user first',
    });
  const pw = nss === 'unknown' ? undefined : nss;
  const group = pw ? (groups.find((g) => g.gid === pw.gid)?.name ?? null) : null;
  const notes: string[] = [];
  if (!pw)
    notes.push(`note: ${user} could not be looked up (no getent; not in /etc/passwd); Group= is left to systemd`);
  else if (pw.uid !== owner)
    notes.push(
      `note: ${homeDir} belongs to uid ${owner}, not to ${user}: ${user} must be able to write the sessions folders`,
    );

  const cfg = loadGuardConfig(str(opts.config));
  const server = parseServerConfig(cfg.sections.server, cfg.path);
  const metrics = parseMetricsConfig(cfg.sections.metrics, cfg.path);
  const archive = cfg.sections.prune?.archive_dir;
  const dirs: WritableDir[] = [
    ...(typeof archive === 'string' && isAbsolute(archive)
      ? [{ path: archive, what: 'prune.archive_dir', mode: 0o750 }]
      : []),
    ...(metrics.textfile_dir ? [{ path: metrics.textfile_dir, what: 'metrics.textfile_dir', mode: 0o755 }] : []),
  ];

  // Writable: the home (sessions, seahorse.db, the lock), agents' sessions folders elsewhere,
  // the archive folder and the textfile folder. `-`: may not exist yet.
  const extra = outermost([...home.sessionsDirs.map((s) => s.dir), ...dirs.map((d) => d.path)]).filter(
    (p) => !(p === homeDir || p.startsWith(homeDir + '/')),
  );

  const cli = realpathSync(fileURLToPath(new URL('../cli.js', import.meta.url)));
  const node = process.execPath;
  const everything = [node, cli, homeDir, ...extra];
  const videoGroup = groups.some((g) => g.name === 'video') && findVcgencmd() !== null;
  const gatewayUnit = str(opts.gatewayUnit) ?? 'picoclaw.service';
  const shippedDevices = allowedDevices();
  const devices = shippedDevices.filter((d) => existsSync(d));
  const missingDevices = shippedDevices.filter((d) => !devices.includes(d));

  const values: UnitValues = {
    node,
    cli,
    user,
    group,
    home: homeDir,
    readWritePaths: extra.map((p) => `-${p}`),
    protectHome: everything.some(underHomeDirs) ? 'read-only' : 'yes',
    gatewayUnit,
    videoGroup,
    devices,
    loopbackOnly: isLoopback(server.host) && gatewayOnLoopback(home.gateway.host),
    version: guardVersion(),
  };
  const units = renderUnits(values);
  const dest = resolve(str(opts.dest) ?? '/etc/systemd/system');
  const sudo = typeof process.getuid === 'function' && process.getuid() === 0 ? '' : 'sudo ';
  const commands = [`${sudo}systemctl daemon-reload`, `${sudo}systemctl enable --now ${GUARD_UNIT}`];

  const out: string[] = [];
  // The units as written, never wrapped to the terminal: a comment's second half without its `#` is not a unit.
  const raw: string[] = [];
  if (opts.dryRun) {
    for (const u of units) {
      raw.push(`# ---- ${join(dest, u.file)} ----`);
      raw.push(...u.text.replace(/\n*$/, '').split('\n').map(escapeControl));
      raw.push('');
    }
    prepareDirs(
      dirs.filter((d) => !(d.path === homeDir || d.path.startsWith(homeDir + '/'))),
      { name: user, group, uid: pw?.uid ?? null, gid: pw?.gid ?? null },
      true,
      sudo,
      out,
      notes,
    );
    out.push(`Dry run: nothing was written. Without --dry-run these ${units.length} files are written, then run:`);
  } else {
    for (const u of units) {
      const path = join(dest, u.file);
      try {
        mkdirSync(dirname(path), { recursive: true });
        writeFileAtomic(path, u.text.endsWith('\n') ? u.text : u.text + '\n');
      } catch (err) {
        const code = errnoCode(err);
        throw new GuardError(`cannot write ${path}: ${code ?? String(err)}`, {
          exitCode: code === 'EACCES' || code === 'EPERM' || code === 'EROFS' ? ExitCode.USAGE : ExitCode.FAILURE,
          path,
          hint:
            code === 'EACCES' || code === 'EPERM'
              ? 'run it with sudo (the units go to /etc/systemd/system), or pass --dest <dir>'
              : undefined,
        });
      }
      out.push(`wrote ${path}`);
    }
    prepareDirs(
      dirs.filter((d) => !(d.path === homeDir || d.path.startsWith(homeDir + '/'))),
      { name: user, group, uid: pw?.uid ?? null, gid: pw?.gid ?? null },
      false,
      sudo,
      out,
      notes,
    );
    out.push('');
    out.push(`The guard runs as ${user}${group ? `:${group}` : ''} with ${node} and ${cli}, for ${homeDir}.`);
    out.push('Now run:');
  }
  for (const c of commands) out.push(`  ${c}`);
  if (
    !['/etc/systemd/system', '/run/systemd/system', '/usr/lib/systemd/system', '/lib/systemd/system'].includes(dest)
  ) {
    notes.push(`note: ${dest} is not a folder systemd loads units from; copy the files to /etc/systemd/system first`);
  }
  if (
    !existsSync(join('/etc/systemd/system', gatewayUnit)) &&
    !existsSync(join('/lib/systemd/system', gatewayUnit)) &&
    !existsSync(join('/usr/lib/systemd/system', gatewayUnit)) &&
    !existsSync(join(dest, gatewayUnit))
  ) {
    notes.push(
      `note: no ${gatewayUnit} found: the drop-in and After= take effect once the gateway's unit has ` +
        `that name (--gateway-unit)`,
    );
  }
  if (missingDevices.length > 0)
    notes.push(
      `note: no ${missingDevices.join(' or ')} on this board (no Raspberry Pi firmware): their DeviceAllow= lines were ` +
        `left out`,
    );
  if (!values.loopbackOnly)
    notes.push(
      'note: the guard or the gateway uses a non-loopback address, so the loopback-only IP filter was left out',
    );
  out.push(...notes);
  if (raw.length > 0) process.stdout.write(raw.join('\n') + '\n');
  process.stdout.write(layout(out, outputWidth(opts)) + '\n');
  return ExitCode.OK;
}
