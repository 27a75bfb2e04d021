/**
 * The sandbox's seccomp filter, as the classic BPF program bubblewrap loads from `--seccomp FD`.
 *
 * Built here in a few lines rather than with libseccomp (a native addon, or a Debian tool that would
 * have to be installed and run at every start): the program is a flat list of "this syscall number
 * → EPERM", which classic BPF expresses directly, and a table in TypeScript is easy to review and
 * to test. It is a deny list on top of what bubblewrap already takes away (capabilities, nested
 * user namespaces), for calls a coding sandbox never needs and that have been kernel attack surface.
 */

/** The calls denied, by class; names are Linux syscall names. */
export const DENIED_SYSCALLS = {
  'kernel modules': ['init_module', 'finit_module', 'delete_module'],
  keyring: ['add_key', 'request_key', 'keyctl'],
  mount: [
    'mount',
    'umount2',
    'pivot_root',
    'fsopen',
    'fsconfig',
    'fsmount',
    'fspick',
    'move_mount',
    'open_tree',
    'mount_setattr',
  ],
  // ptrace itself is only refused for attaching to a running process (see PTRACE_ATTACH_REQUESTS).
  'ptrace of others': ['process_vm_readv', 'process_vm_writev', 'pidfd_getfd'],
  bpf: ['bpf'],
  userfaultfd: ['userfaultfd'],
  perf: ['perf_event_open'],
  // io_uring runs file and socket operations in kernel workers that seccomp never sees, and has been
  // a steady source of kernel exploits; libraries fall back to plain calls when setup is refused.
  io_uring: ['io_uring_setup', 'io_uring_enter', 'io_uring_register'],
  'host administration': [
    'kexec_load',
    'kexec_file_load',
    'reboot',
    'swapon',
    'swapoff',
    'acct',
    'syslog',
    'quotactl',
    'open_by_handle_at',
    'lookup_dcookie',
    'iopl',
    'ioperm',
  ],
} as const;

type SyscallName = (typeof DENIED_SYSCALLS)[keyof typeof DENIED_SYSCALLS][number] | 'ptrace';

/** PTRACE_ATTACH and PTRACE_SEIZE: a debugger may still run its own child (PTRACE_TRACEME). */
export const PTRACE_ATTACH_REQUESTS = [16, 0x4206] as const;

export type SeccompArch = 'x64' | 'arm64';

/** AUDIT_ARCH_* values and syscall numbers (asm/unistd_64.h; asm-generic/unistd.h for arm64). */
const ARCHES: Record<SeccompArch, { audit: number; numbers: Partial<Record<SyscallName, number>> }> = {
  x64: {
    audit: 0xc000003e,
    numbers: {
      init_module: 175,
      finit_module: 313,
      delete_module: 176,
      add_key: 248,
      request_key: 249,
      keyctl: 250,
      mount: 165,
      umount2: 166,
      pivot_root: 155,
      fsopen: 430,
      fsconfig: 431,
      fsmount: 432,
      fspick: 433,
      move_mount: 429,
      open_tree: 428,
      mount_setattr: 442,
      ptrace: 101,
      process_vm_readv: 310,
      process_vm_writev: 311,
      pidfd_getfd: 438,
      bpf: 321,
      userfaultfd: 323,
      perf_event_open: 298,
      io_uring_setup: 425,
      io_uring_enter: 426,
      io_uring_register: 427,
      kexec_load: 246,
      kexec_file_load: 320,
      reboot: 169,
      swapon: 167,
      swapoff: 168,
      acct: 163,
      syslog: 103,
      quotactl: 179,
      open_by_handle_at: 304,
      lookup_dcookie: 212,
      iopl: 172,
      ioperm: 173,
    },
  },
  arm64: {
    audit: 0xc00000b7,
    numbers: {
      init_module: 105,
      finit_module: 273,
      delete_module: 106,
      add_key: 217,
      request_key: 218,
      keyctl: 219,
      mount: 40,
      umount2: 39,
      pivot_root: 41,
      fsopen: 430,
      fsconfig: 431,
      fsmount: 432,
      fspick: 433,
      move_mount: 429,
      open_tree: 428,
      mount_setattr: 442,
      ptrace: 117,
      process_vm_readv: 270,
      process_vm_writev: 271,
      pidfd_getfd: 438,
      bpf: 280,
      userfaultfd: 282,
      perf_event_open: 241,
      io_uring_setup: 425,
      io_uring_enter: 426,
      io_uring_register: 427,
      kexec_load: 104,
      kexec_file_load: 294,
      reboot: 142,
      swapon: 224,
      swapoff: 225,
      acct: 89,
      syslog: 116,
      quotactl: 60,
      open_by_handle_at: 265,
      lookup_dcookie: 18,
    },
  },
};

// Classic BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h).
const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const JGE_K = 0x35;
const RET_K = 0x06;
const RET_ALLOW = 0x7fff0000;
const RET_KILL_PROCESS = 0x80000000;
const RET_ERRNO = 0x00050000;
const EPERM = 1;
const ENOSYS = 38;
// struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6] (little-endian hosts).
const OFFSET_NR = 0;
const OFFSET_ARCH = 4;
const OFFSET_ARG0_LOW = 16;
const X32_SYSCALL_BIT = 0x40000000;

/** A jump goes to the next instruction (0) or to a label placed later in the program. */
type Jump = 0 | string;
type Instruction = { code: number; jt: Jump; jf: Jump; k: number } | { label: string };

/** The node arch name this process runs on, if the filter knows it. */
export function seccompArchFor(nodeArch: string): SeccompArch | undefined {
  return nodeArch === 'x64' || nodeArch === 'arm64' ? nodeArch : undefined;
}

/**
 * The compiled filter (struct sock_filter[], 8 bytes each). A call from another ABI (i386 or x32
 * on x86_64) is not in the table's numbering, so it is killed or refused rather than misread.
 */
export function buildSeccompFilter(arch: SeccompArch): Buffer {
  const { audit, numbers } = ARCHES[arch];
  const denied = Object.values(DENIED_SYSCALLS)
    .flat()
    .flatMap((name) => (numbers[name] === undefined ? [] : [numbers[name]]));
  const op = (code: number, k: number, jt: Jump = 0, jf: Jump = 0): Instruction => ({ code, jt, jf, k });
  const program: Instruction[] = [
    op(LD_W_ABS, OFFSET_ARCH),
    op(JEQ_K, audit, 'syscall', 0),
    op(RET_K, RET_KILL_PROCESS),
    { label: 'syscall' },
    op(LD_W_ABS, OFFSET_NR),
    ...(arch === 'x64' ? [op(JGE_K, X32_SYSCALL_BIT, 'enosys', 0)] : []),
    ...denied.map((nr) => op(JEQ_K, nr, 'deny', 0)),
    op(JEQ_K, numbers.ptrace!, 'ptrace', 0),
    op(RET_K, RET_ALLOW),
    { label: 'ptrace' },
    op(LD_W_ABS, OFFSET_ARG0_LOW),
    ...PTRACE_ATTACH_REQUESTS.map((request) => op(JEQ_K, request, 'deny', 0)),
    op(RET_K, RET_ALLOW),
    { label: 'enosys' },
    op(RET_K, RET_ERRNO | ENOSYS),
    { label: 'deny' },
    op(RET_K, RET_ERRNO | EPERM),
  ];
  return assemble(program);
}

/** Resolves labels into relative jump offsets and encodes struct sock_filter[] in host (little-endian) order. */
function assemble(program: Instruction[]): Buffer {
  const labels = new Map<string, number>();
  const code: Array<Extract<Instruction, { code: number }>> = [];
  for (const item of program) {
    if ('label' in item) labels.set(item.label, code.length);
    else code.push(item);
  }
  const out = Buffer.alloc(code.length * 8);
  code.forEach((ins, index) => {
    const offset = (jump: Jump): number => {
      if (jump === 0) return 0;
      const target = labels.get(jump);
      if (target === undefined || target <= index || target - index - 1 > 255)
        throw new Error(`seccomp program: bad jump to ${jump}`);
      return target - index - 1;
    };
    out.writeUInt16LE(ins.code, index * 8);
    out.writeUInt8(offset(ins.jt), index * 8 + 2);
    out.writeUInt8(offset(ins.jf), index * 8 + 3);
    out.writeUInt32LE(ins.k >>> 0, index * 8 + 4);
  });
  return out;
}
