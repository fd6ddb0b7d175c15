/* A DMA-heavy kernel shaped like step 3 of PrIM's TRNS: tasklets take tiles from a shared
 * counter under a mutex, read a tile of 32..256 bytes from MRAM, read-modify-write an 8-byte
 * "done" flag in MRAM under a second mutex, update the tile in WRAM and write it back, and
 * meet at a barrier after every round. Most of the time the tasklets wait for the DMA engine
 * or spin on a mutex. */
#include <defs.h>
#include <mram.h>
#include <mutex.h>
#include <barrier.h>
#include <perfcounter.h>
#include <stdint.h>

#define TILE_BYTES 256
#define TILES 512 /* per round */

__host uint32_t rounds;
__host uint64_t instructions;
__host uint32_t checksum[NR_TASKLETS];

__mram_noinit uint64_t tiles[TILES * TILE_BYTES / 8];
__mram_noinit uint64_t done[TILES];

uint32_t next_tile;
uint32_t round_end;
__dma_aligned uint64_t data[NR_TASKLETS][TILE_BYTES / 8];
__dma_aligned uint64_t flag[NR_TASKLETS];

BARRIER_INIT(b, NR_TASKLETS);
MUTEX_INIT(tile_mutex);
MUTEX_INIT(done_mutex);

static uint32_t get_tile(void)
{
    mutex_lock(tile_mutex);
    uint32_t t = next_tile++;
    mutex_unlock(tile_mutex);
    return t;
}

int main(void)
{
    unsigned id = me();
    if (id == 0) {
        perfcounter_config(COUNT_INSTRUCTIONS, true);
    }
    barrier_wait(&b);
    uint64_t *buf = data[id];
    uint32_t acc = 0;
    for (uint32_t r = 0; r < rounds; r++) {
        if (id == 0) {
            next_tile = r * TILES;
            round_end = (r + 1) * TILES;
        }
        barrier_wait(&b);
        uint32_t t;
        while ((t = get_tile()) < round_end) {
            uint32_t tile = t % TILES;
            uint32_t bytes = 32u << (t & 3); /* 32, 64, 128, 256 */
            mram_read(&tiles[tile * (TILE_BYTES / 8)], buf, bytes);
            mutex_lock(done_mutex);
            mram_read(&done[tile], &flag[id], 8);
            uint64_t was = flag[id];
            flag[id] = was + 1;
            mram_write(&flag[id], &done[tile], 8);
            mutex_unlock(done_mutex);
            for (uint32_t i = 0; i < bytes / 8; i++)
                buf[i] = buf[i] + t + (uint32_t)was;
            mram_write(buf, &tiles[tile * (TILE_BYTES / 8)], bytes);
            acc += (uint32_t)was;
        }
        barrier_wait(&b);
    }
    checksum[id] = acc;
    barrier_wait(&b);
    if (id == 0)
        instructions = perfcounter_get();
    return 0;
}
