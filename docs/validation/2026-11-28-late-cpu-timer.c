/* 2026-11-28-late-cpu-timer.c - how late Linux signals a per-thread CPU-time
 * timer on this VM, without gpuprof: three threads each arm a 1 ms
 * timer_create(CLOCK_THREAD_CPUTIME_ID, SIGEV_THREAD_ID) timer, burn 150,
 * 100, 50 ms of their CPU time, and print how much of it the signals
 * carried (period x (1 + si_overrun)).  docs/SHIM.md, "Late signals".
 *   gcc -O1 -o late 2026-11-28-late-cpu-timer.c -lpthread */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static __thread uint64_t sig_ns;
static uint64_t tcpu(void){struct timespec t;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t);return t.tv_sec*1000000000ull+t.tv_nsec;}
static void h(int s, siginfo_t*si, void*u){(void)s;(void)u; sig_ns += 1000000ull*(1+(si->si_overrun>0?si->si_overrun:0));}
static void *w(void *a){
  uint64_t ms=(uintptr_t)a;
  struct sigevent sev; memset(&sev,0,sizeof sev); sev.sigev_notify=SIGEV_THREAD_ID; sev.sigev_signo=SIGRTMIN+6;
  sev._sigev_un._tid=syscall(SYS_gettid);
  timer_t id; timer_create(CLOCK_THREAD_CPUTIME_ID,&sev,&id);
  struct itimerspec its={{0,1000000},{0,1000000}}; timer_settime(id,0,&its,NULL);
  uint64_t end=tcpu()+ms*1000000ull; volatile uint64_t x=1;
  while(tcpu()<end) for(int i=0;i<1000;i++) x=x*6364136223846793005ull+1;
  uint64_t c=tcpu(), s=sig_ns;
  printf("ms=%llu cpu=%.1f signalled=%.1f lag=%.1f\n",(unsigned long long)ms,c/1e6,s/1e6,(double)(c-s)/1e6);
  timer_delete(id); return NULL;}
int main(void){struct sigaction sa; memset(&sa,0,sizeof sa); sa.sa_sigaction=h; sa.sa_flags=SA_SIGINFO|SA_RESTART; sigaction(SIGRTMIN+6,&sa,NULL);
  pthread_t t[3]; uint64_t ms[3]={150,100,50};
  for(int k=0;k<3;k++) pthread_create(&t[k],NULL,w,(void*)(uintptr_t)ms[k]);
  for(int k=0;k<3;k++) pthread_join(t[k],NULL); return 0;}
