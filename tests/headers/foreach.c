/* Run-time check of DPU_FOREACH / DPU_RANK_FOREACH against a mock of the four
 * iterator functions (libdpu provides the real ones with the same contract:
 * `next` is the current element while `has_next`, `count` the running index). */
#include <dpu.h>
#include <stdio.h>

struct dpu_t {
    int id;
};
struct dpu_rank_t {
    uint32_t nr_dpus;
    struct dpu_t *dpus;
};

static struct dpu_set_t rank_set(struct dpu_rank_t **slot)
{
    struct dpu_set_t s;
    s.kind = DPU_SET_RANKS;
    s.list.nr_ranks = 1;
    s.list.ranks = slot;
    return s;
}

struct dpu_set_rank_iterator_t dpu_set_rank_iterator_from(struct dpu_set_t *set)
{
    struct dpu_set_rank_iterator_t it;
    it.set = *set;
    it.count = 0;
    it.has_next = set->kind == DPU_SET_RANKS && set->list.nr_ranks > 0;
    if (it.has_next)
        it.next = rank_set(&set->list.ranks[0]);
    return it;
}

void dpu_set_rank_iterator_next(struct dpu_set_rank_iterator_t *it)
{
    it->count++;
    it->has_next = it->count < it->set.list.nr_ranks;
    if (it->has_next)
        it->next = rank_set(&it->set.list.ranks[it->count]);
}

static uint32_t dpu_in_rank; /* position inside the current rank (mock state kept simple) */

static void dpu_settle(struct dpu_set_dpu_iterator_t *it, uint32_t pos)
{
    for (;;) {
        if (!it->rank_iterator.has_next) {
            it->has_next = false;
            return;
        }
        it->rank = it->rank_iterator.next;
        struct dpu_rank_t *r = it->rank.list.ranks[0];
        if (pos < r->nr_dpus) {
            it->has_next = true;
            it->next.kind = DPU_SET_DPU;
            it->next.dpu = &r->dpus[pos];
            dpu_in_rank = pos;
            return;
        }
        dpu_set_rank_iterator_next(&it->rank_iterator);
        pos = 0;
    }
}

struct dpu_set_dpu_iterator_t dpu_set_dpu_iterator_from(struct dpu_set_t *set)
{
    struct dpu_set_dpu_iterator_t it;
    it.count = 0;
    if (set->kind == DPU_SET_DPU) {
        it.rank_iterator.has_next = false;
        it.has_next = true;
        it.next = *set;
        return it;
    }
    it.rank_iterator = dpu_set_rank_iterator_from(set);
    dpu_settle(&it, 0);
    return it;
}

void dpu_set_dpu_iterator_next(struct dpu_set_dpu_iterator_t *it)
{
    it->count++;
    if (!it->rank_iterator.has_next) {
        it->has_next = false;
        return;
    }
    /* recover the position from the current DPU pointer */
    struct dpu_rank_t *r = it->rank.list.ranks[0];
    uint32_t pos = (uint32_t)(it->next.dpu - r->dpus) + 1;
    (void)dpu_in_rank;
    dpu_settle(it, pos);
}

int main(void)
{
    struct dpu_t d0[3] = { { 0 }, { 1 }, { 2 } }, d1[2] = { { 3 }, { 4 } }, d2[4] = { { 5 }, { 6 }, { 7 }, { 8 } };
    struct dpu_rank_t r0 = { 3, d0 }, r1 = { 2, d1 }, r2 = { 4, d2 };
    struct dpu_rank_t *ranks[3] = { &r0, &r1, &r2 };
    struct dpu_set_t set, rank, dpu, inner;
    uint32_t i, j, r;
    int bad = 0, n = 0;
    set.kind = DPU_SET_RANKS;
    set.list.nr_ranks = 3;
    set.list.ranks = ranks;

    DPU_FOREACH(set, dpu, i) {
        if (dpu.kind != DPU_SET_DPU || dpu.dpu->id != (int)i || (int)i != n)
            bad |= 1;
        n++;
    }
    bad |= (n != 9) << 1;
    bad |= (i != 9) << 8; /* after a complete loop: the number of DPUs, as in the SDK */

    n = 0;
    DPU_FOREACH(set, dpu) {
        if (dpu.dpu->id == 4)
            break;
        n++;
    }
    bad |= (n != 4) << 2;

    n = 0;
    int expect_id = 0;
    DPU_RANK_FOREACH(set, rank, r) {
        DPU_FOREACH(rank, dpu, j) {
            if (dpu.dpu->id != expect_id++)
                bad |= 1 << 3;
            /* a third level over a single-DPU set */
            DPU_FOREACH(dpu, inner, i) {
                if (i != 0 || inner.dpu != dpu.dpu)
                    bad |= 1 << 4;
            }
        }
        /* as the SDK's macros: the index is assigned before the end test */
        if (j != ranks[r]->nr_dpus)
            bad |= 1 << 5;
        n++;
    }
    bad |= (n != 3) << 6;
    bad |= (r != 3) << 9;

    n = 0;
    DPU_RANK_FOREACH(set, rank) {
        DPU_FOREACH(rank, dpu) {
            n++;
            break;
        }
    }
    bad |= (n != 3) << 7;

    if (bad)
        printf("FOREACH macro check failed: mask %#x\n", bad);
    return bad != 0;
}
