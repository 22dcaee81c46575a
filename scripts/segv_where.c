// LD_PRELOAD diagnostic for the GPU machine (scripts/gpu_diagnose.py), which has no gdb:
// on SIGSEGV, print the faulting instruction's library, symbol and offset, then a
// backtrace, and die of the signal as before. Not part of the build.
//
//   gcc -shared -fPIC -O1 scripts/segv_where.c -o segv_where.so -ldl
//   LD_PRELOAD=$PWD/segv_where.so python3 ...
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

static void describe(const char* what, void* pc) {
  Dl_info info;
  char line[512];
  if (dladdr(pc, &info) && info.dli_fname) {
    snprintf(line, sizeof line, "segv_where: %s %p in %s (+%#lx) %s\n", what, pc, info.dli_fname,
             (unsigned long)((char*)pc - (char*)info.dli_fbase),
             info.dli_sname ? info.dli_sname : "?");
  } else {
    snprintf(line, sizeof line, "segv_where: %s %p (no object)\n", what, pc);
  }
  write(2, line, strlen(line));
}

static void on_segv(int sig, siginfo_t* si, void* ctx) {
  ucontext_t* uc = (ucontext_t*)ctx;
  char line[128];
  snprintf(line, sizeof line, "segv_where: signal %d at address %p\n", sig, si->si_addr);
  write(2, line, strlen(line));
#ifdef REG_RIP
  describe("pc", (void*)uc->uc_mcontext.gregs[REG_RIP]);
  // The return address on top of the stack: the caller when the fault is a bad call.
  void** sp = (void**)uc->uc_mcontext.gregs[REG_RSP];
  describe("[rsp]", sp[0]);
#endif
  void* frames[32];
  int n = backtrace(frames, 32);
  for (int i = 0; i < n; ++i) describe("frame", frames[i]);
}

__attribute__((constructor)) static void install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
  sigaction(SIGSEGV, &sa, NULL);
}
