"use strict";
// node:os: fixed values, the same on every machine and every run: nothing
// of the host is visible.
const bridge = globalThis[Symbol.for("wasmgate.node")];
const signals = Object.freeze({
  SIGHUP: 1, SIGINT: 2, SIGQUIT: 3, SIGILL: 4, SIGTRAP: 5, SIGABRT: 6, SIGIOT: 6, SIGBUS: 7, SIGFPE: 8, SIGKILL: 9,
  SIGUSR1: 10, SIGSEGV: 11, SIGUSR2: 12, SIGPIPE: 13, SIGALRM: 14, SIGTERM: 15, SIGCHLD: 17, SIGSTKFLT: 16,
  SIGCONT: 18, SIGSTOP: 19, SIGTSTP: 20, SIGTTIN: 21, SIGTTOU: 22, SIGURG: 23, SIGXCPU: 24, SIGXFSZ: 25,
  SIGVTALRM: 26, SIGPROF: 27, SIGWINCH: 28, SIGIO: 29, SIGPOLL: 29, SIGPWR: 30, SIGSYS: 31,
});
const errno = Object.freeze({
  E2BIG: 7, EACCES: 13, EADDRINUSE: 98, EADDRNOTAVAIL: 99, EAGAIN: 11, EBADF: 9, EBUSY: 16, ECONNREFUSED: 111,
  ECONNRESET: 104, EEXIST: 17, EINTR: 4, EINVAL: 22, EIO: 5, EISDIR: 21, EMFILE: 24, ENOENT: 2, ENOMEM: 12,
  ENOSPC: 28, ENOSYS: 38, ENOTDIR: 20, ENOTEMPTY: 39, ENOTSUP: 95, EPERM: 1, EPIPE: 32, ERANGE: 34, ETIMEDOUT: 110,
});
const priority = Object.freeze({
  PRIORITY_LOW: 19, PRIORITY_BELOW_NORMAL: 10, PRIORITY_NORMAL: 0, PRIORITY_ABOVE_NORMAL: -7,
  PRIORITY_HIGH: -14, PRIORITY_HIGHEST: -20,
});
const cpu = () => ({ model: "wasmgate", speed: 0, times: { user: 0, nice: 0, sys: 0, idle: 0, irq: 0 } });
module.exports = {
  EOL: "\n",
  devNull: "/dev/null",
  arch: () => "x64",
  availableParallelism: () => 1,
  constants: Object.freeze({ signals, errno, priority, dlopen: Object.freeze({}), UV_UDP_REUSEADDR: 4 }),
  cpus: () => [cpu()],
  endianness: () => "LE",
  freemem: () => 0,
  getPriority: () => 0,
  setPriority() { throw bridge.accessDenied("os.setPriority()"); },
  homedir: () => "/",
  hostname: () => "wasmgate",
  loadavg: () => [0, 0, 0],
  machine: () => "x86_64",
  networkInterfaces: () => ({}),
  platform: () => "linux",
  release: () => "0.0.0-wasmgate",
  tmpdir: () => "/tmp",
  totalmem: () => 0,
  type: () => "Linux",
  uptime: () => 0,
  userInfo: () => ({ uid: 1000, gid: 1000, username: "wasmgate", homedir: "/", shell: null }),
  version: () => "wasmgate",
};
