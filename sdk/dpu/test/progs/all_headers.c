/* Every DPU-side header and function of the SDK surface (SDK-COMPAT.md), 16 tasklets. */
#include <alloc.h>
#include <assert.h>
#include <atomic_bit.h>
#include <attributes.h>
#include <barrier.h>
#include <built_ins.h>
#include <ctype.h>
#include <defs.h>
#include <errno.h>
#include <handshake.h>
#include <inttypes.h>
#include <limits.h>
#include <mram.h>
#include <mram_unaligned.h>
#include <mutex.h>
#include <mutex_pool.h>
#include <perfcounter.h>
#include <sem.h>
#include <seqread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysdef.h>
#include <vmutex.h>
#include <float.h>
#include <iso646.h>

#define BUF 256

STDOUT_BUFFER_INIT(4096);
ATOMIC_BIT_INIT(extra_bit);
ATOMIC_BIT_INIT(barrier_bits)[4];
BARRIER_INIT(my_barrier, NR_TASKLETS);
BARRIER_INIT(second_barrier, NR_TASKLETS);
MUTEX_INIT(my_mutex);
MUTEX_POOL_INIT(my_pool, 8);
VMUTEX_INIT(my_vmutex, 64, 4);
SEMAPHORE_INIT(my_sem, 2);
barrier_t hand_barriers[4];

__host uint32_t counter;
__host uint64_t checksum;
__host perfcounter_t cycles;
__host int32_t handshake_result = -1;
__mram uint64_t mram_in[BUF];
__mram_noinit uint64_t mram_out[NR_TASKLETS * BUF];
__dma_aligned uint8_t shared_cache[NR_TASKLETS][BUF * 8 / NR_TASKLETS];
uint32_t __keep kept_symbol;

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

int main(void)
{
    sysname_t id = me();
    if (id == 0) {
        mem_reset();
        perfcounter_config(COUNT_CYCLES, true);
        counter = 0;
        for (int i = 0; i < 4; i++) {
            hand_barriers[i].wait_queue = 0xff;
            hand_barriers[i].count = NR_TASKLETS / 4;
            hand_barriers[i].initial_count = NR_TASKLETS / 4;
            hand_barriers[i].lock = (uint8_t)(uintptr_t)&ATOMIC_BIT_GET(barrier_bits)[i];
        }
    }
    barrier_wait(&my_barrier);

    /* DMA */
    uint64_t *cache = mem_alloc(64);
    mram_read(&mram_in[id], cache, 64);
    mram_write(cache, &mram_out[id * BUF], 64);
    mram_read(DPU_MRAM_HEAP_POINTER, cache, 8);
    uint8_t unaligned_buf[48] __dma_aligned;
    uint8_t *u = mram_read_unaligned((__mram_ptr uint8_t *)mram_in + 3, unaligned_buf, 20);
    mram_write_unaligned(u, (__mram_ptr uint8_t *)&mram_out[id * BUF] + 5, 13);

    /* seqread */
    seqreader_buffer_t sc = seqread_alloc();
    seqreader_t sr;
    uint64_t *p = seqread_init(sc, mram_in, &sr);
    uint64_t sum = 0;
    for (int i = 0; i < BUF; i++) {
        sum += *p;
        p = seqread_get(p, sizeof(*p), &sr);
    }
    p = seqread_seek(&mram_in[10], &sr);
    if (seqread_tell(p, &sr) != &mram_in[10]) {
        halt();
    }

    /* synchronisation */
    mutex_lock(my_mutex);
    counter++;
    checksum += sum;
    mutex_unlock(my_mutex);
    if (mutex_trylock(MUTEX_GET(my_mutex))) {
        mutex_unlock(my_mutex);
    }
    mutex_pool_lock(&my_pool, id);
    mutex_pool_unlock(&my_pool, id);
    vmutex_lock(&my_vmutex, id * 3);
    vmutex_unlock(&my_vmutex, id * 3);
    sem_take(&my_sem);
    sem_give(&my_sem);
    ATOMIC_BIT_ACQUIRE(extra_bit);
    ATOMIC_BIT_RELEASE(extra_bit);
    barrier_wait(&hand_barriers[id % 4]);
    if (id == 1) {
        handshake_notify();
    } else if (id == 0) {
        handshake_result = handshake_wait_for(1);
    }
    barrier_wait(&second_barrier);

    /* allocators */
    if (id == 0) {
        buddy_init(4096);
        void *a = buddy_alloc(100);
        void *b = buddy_alloc(30);
        a = buddy_realloc(a, 300);
        buddy_free(b);
        buddy_free(a);
        buddy_reset();
        fsb_allocator_t f = fsb_alloc(24, 8);
        void *blk = fsb_get(f);
        fsb_free(f, blk);
    }

    /* libc bits */
    char text[32];
    strcpy(text, "dpu");
    strcat(text, "-42");
    int n = atoi(text + 4) + (int)strlen(text) + abs(-3) + (int)labs(-4L);
    int arr[5] = { 5, 1, 4, 2, 3 };
    qsort(arr, 5, sizeof(int), cmp_int);
    memset(text, 0, sizeof(text));
    memmove(text + 1, text, 8);
    n += memcmp(text, text + 1, 4) + (strchr("abc", 'b') != NULL) + isdigit('7') + toupper('a');
    n += (int)strtol("0x1f", NULL, 0) + strncmp("ab", "ac", 2) + (strrchr("aba", 'a') != NULL);
    int32_t m8 = __builtin_mul_sl_uh(0x1234, 0xff00);
    (void)m8;
    assert(n != 0 && check_stack() > 0);
    if (id == 0) {
        cycles = perfcounter_get();
        printf("counter=%u checksum=%" PRIu64 " n=%d cycles=%llu %s\n", counter, checksum, n,
               (unsigned long long)cycles, "done");
        puts("puts works");
        putchar('\n');
    }
    return 0;
}
