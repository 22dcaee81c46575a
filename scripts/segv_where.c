// LD_PRELOAD diagnostic for native crashes on a machine without gdb (the GPU machine's
// image). Not part of the build. It located the H200 crashes of December 2026: a second
// libstdc++ linked into the module (see CMakeLists.txt).
//
//   gcc -shared -fPIC -O1 scripts/segv_where.c -o segv_where.so -ldl
//   LD_PRELOAD=$PWD/segv_where.so python3 ...
//
// - On SIGSEGV, SIGFPE, SIGBUS, SIGILL or SIGABRT: the signal's code, the faulting
//   instruction's library, symbol and offset, then the return addresses found by scanning
//   the raw stack (the unwinder itself may be what is broken, so it is asked last), and
//   the process dies of the signal as before.
// - Every call of libgcc's frame-registration functions is logged with its caller's
//   library: a driver that registers unwind tables for generated code, and leaves them
//   bogus or freed, breaks every C++ exception thrown afterwards. With
//   SEGV_WHERE_SKIP_NVIDIA=1 the calls from NVIDIA's libraries are not forwarded (an
//   experiment, not a fix).
// - segv_where_fpu() prints the SSE and x87 control words (a driver that unmasks
//   floating-point exceptions turns a harmless division by zero into SIGFPE).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

static void say(const char* line) { write(2, line, strlen(line)); }

static int describe(const char* what, void* pc, int quiet_unknown) {
  Dl_info info;
  char line[512];
  if (dladdr(pc, &info) && info.dli_fname) {
    snprintf(line, sizeof line, "segv_where: %s %p in %s (+%#lx) %s\n", what, pc, info.dli_fname,
             (unsigned long)((char*)pc - (char*)info.dli_fbase),
             info.dli_sname ? info.dli_sname : "?");
    say(line);
    return 1;
  }
  if (!quiet_unknown) {
    snprintf(line, sizeof line, "segv_where: %s %p (no object)\n", what, pc);
    say(line);
  }
  return 0;
}

static void on_signal(int sig, siginfo_t* si, void* ctx) {
  ucontext_t* uc = (ucontext_t*)ctx;
  char line[160];
  snprintf(line, sizeof line, "segv_where: signal %d code %d at address %p\n", sig, si->si_code,
           si->si_addr);
  say(line);
#ifdef REG_RIP
  describe("pc", (void*)uc->uc_mcontext.gregs[REG_RIP], 0);
  void** sp = (void**)uc->uc_mcontext.gregs[REG_RSP];
  int hits = 0;
  for (int i = 0; i < 512 && hits < 40; ++i) hits += describe("stack word", sp[i], 1);
#endif
  void* frames[32];
  int n = backtrace(frames, 32);
  for (int i = 0; i < n; ++i) describe("frame", frames[i], 0);
}

__attribute__((constructor)) static void install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
  int sigs[] = {SIGSEGV, SIGFPE, SIGBUS, SIGILL, SIGABRT};
  for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; ++i) sigaction(sigs[i], &sa, NULL);
}

void segv_where_fpu(const char* when) {
  unsigned int mxcsr = 0;
  unsigned short cw = 0;
  __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
  __asm__ volatile("fnstcw %0" : "=m"(cw));
  char line[160];
  snprintf(line, sizeof line, "segv_where: fpu %s: mxcsr %#x (masks %#x) x87 cw %#x (masks %#x)\n",
           when, mxcsr, (mxcsr >> 7) & 0x3f, cw, cw & 0x3f);
  say(line);
}

// Frame registration, logged and forwarded.
static int skipped(void* caller, const char* name) {
  Dl_info info;
  const char* lib = dladdr(caller, &info) && info.dli_fname ? info.dli_fname : "?";
  int skip = strstr(lib, "nvidia") && getenv("SEGV_WHERE_SKIP_NVIDIA");
  char line[512];
  snprintf(line, sizeof line, "segv_where: %s from %s (+%#lx)%s\n", name, lib,
           (unsigned long)((char*)caller - (char*)info.dli_fbase), skip ? ": skipped" : "");
  say(line);
  return skip;
}

// The real definition: libgcc_s's (loaded local to a library, so not always in the global
// scope RTLD_NEXT searches), or a no-op when there is none (then logged).
static void* next(const char* name) {
  void* f = dlsym(RTLD_NEXT, name);
  if (!f) {
    void* libgcc = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL);
    if (libgcc) f = dlsym(libgcc, name);
  }
  if (!f) {
    say("segv_where: no next ");
    say(name);
    say("\n");
  }
  return f;
}
typedef void (*fn_ptr)(void*);
typedef void (*fn_info)(const void*, void*);
typedef void (*fn_bases)(const void*, void*, void*, void*);
#define CALL_NEXT(name, type, ...)          \
  do {                                      \
    type f_ = (type)next(name);             \
    if (f_) f_(__VA_ARGS__);                \
  } while (0)

void __register_frame(void* begin) {
  if (skipped(__builtin_return_address(0), "__register_frame")) return;
  CALL_NEXT("__register_frame", fn_ptr, begin);
}
void __deregister_frame(void* begin) {
  if (skipped(__builtin_return_address(0), "__deregister_frame")) return;
  CALL_NEXT("__deregister_frame", fn_ptr, begin);
}
void __register_frame_info(const void* begin, void* ob) {
  if (skipped(__builtin_return_address(0), "__register_frame_info")) return;
  CALL_NEXT("__register_frame_info", fn_info, begin, ob);
}
void __register_frame_info_bases(const void* begin, void* ob, void* t, void* d) {
  if (skipped(__builtin_return_address(0), "__register_frame_info_bases")) return;
  CALL_NEXT("__register_frame_info_bases", fn_bases, begin, ob, t, d);
}
void __register_frame_table(void* begin) {
  if (skipped(__builtin_return_address(0), "__register_frame_table")) return;
  CALL_NEXT("__register_frame_table", fn_ptr, begin);
}
void* __deregister_frame_info(const void* begin) {
  if (skipped(__builtin_return_address(0), "__deregister_frame_info")) return NULL;
  void* (*f)(const void*) = (void* (*)(const void*))next("__deregister_frame_info");
  return f ? f(begin) : NULL;
}
