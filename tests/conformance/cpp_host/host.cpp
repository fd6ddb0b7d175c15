// The SDK's C++ host API (dpu.hpp: dpu::DpuSet, DpuSetAsync, DpuProgram, DpuSymbol, DpuError)
// mixed with the C API, <dpu.h> included inside extern "C" { } as C++ programs do. Built with
// g++ and clang++. Every result is checked against the CPU.
extern "C" {
#include <dpu.h>
}
#include <dpu.hpp>

#include <cstdint>
#include <cstring>
#include <iostream>
#include <sstream>
#include <vector>

static int failures;
static void check(const std::string &what, bool ok)
{
    std::cout << (ok ? "ok   " : "FAIL ") << what << "\n";
    if (!ok)
        failures++;
}

static const unsigned N = 64;

static std::vector<uint32_t> expected(const std::vector<uint32_t> &in, uint32_t factor, uint32_t tag)
{
    std::vector<uint32_t> out(in.size());
    for (size_t i = 0; i < in.size(); i++)
        out[i] = in[i] * factor + tag;
    return out;
}

int main()
{
    using dpu::DpuSet;
    auto system = DpuSet::allocate(4, "nrJobsPerRank=64");
    const size_t nr = system.dpus().size();
    check("allocate(4): 4 DPUs, 1 rank", nr == 4 && system.ranks().size() == 1);
    dpu::DpuProgram program = system.load("./bin/dpu_task");

    // The same factor to every DPU (by name), one tag and one input per DPU (by name and symbol).
    system.copy("factor", std::vector<uint32_t>{ 3 });
    std::vector<std::vector<uint32_t>> tags(nr), inputs(nr);
    for (size_t d = 0; d < nr; d++) {
        tags[d] = { static_cast<uint32_t>(100 + d) };
        for (unsigned i = 0; i < N; i++)
            inputs[d].push_back(static_cast<uint32_t>(d * 1000 + i * 7));
    }
    system.copy("dpu_tag", tags);
    dpu::DpuSymbol input = program.get("input");
    system.copy(input, inputs);
    system.exec();

    std::vector<std::vector<uint32_t>> outputs(nr, std::vector<uint32_t>(N));
    system.copy(outputs, "output");
    bool all = true;
    for (size_t d = 0; d < nr; d++)
        all = all && outputs[d] == expected(inputs[d], 3, 100 + static_cast<uint32_t>(d));
    check("copy broadcast / per-DPU by name and DpuSymbol, exec, copy back: out = in * 3 + tag", all);

    // The C API on the same set: DPU_FOREACH + dpu_copy_from, flags combined with |.
    struct dpu_set_t c_set = system.cSet(), c_dpu;
    uint32_t nr_dpus = 0, each;
    DPU_ASSERT(dpu_get_nr_dpus(c_set, &nr_dpus));
    bool c_ok = nr_dpus == nr;
    DPU_FOREACH (c_set, c_dpu, each) {
        uint32_t first = 0;
        DPU_ASSERT(dpu_copy_from(c_dpu, "output", 0, &first, sizeof(first)));
        c_ok = c_ok && first == outputs[each][0];
    }
    dpu_xfer_flags_t flags = DPU_XFER_DEFAULT | DPU_XFER_NO_RESET;
    c_ok = c_ok && flags == DPU_XFER_NO_RESET;
    check("the C API on the C++ set (dpu_get_nr_dpus, DPU_FOREACH, dpu_copy_from, flag |)", c_ok);

    // One DPU of the set as a set, and its log.
    std::vector<std::vector<uint32_t>> one(1, std::vector<uint32_t>(N));
    system.dpus()[2]->copy(one, "output");
    check("dpus()[2]->copy: the third DPU's output", one[0] == outputs[2]);
    std::ostringstream log;
    system.log(log);
    std::string text = log.str();
    check("log(): the SDK's header and the printf line of each DPU",
        text.find("=== DPU#0x30000000 ===\ntag 100 run 1\n") != std::string::npos &&
            text.find("=== DPU#0x30000003 ===\ntag 103 run 1\n") != std::string::npos);

    // Asynchronous: queued copy, launch, callback per rank, sync.
    std::vector<uint32_t> rank_sums;
    auto async = system.async();
    const std::vector<uint32_t> five{ 5 }; // (an asynchronous copy reads it later: keep it alive)
    async.copy("factor", five);
    async.exec();
    async.call([&rank_sums](DpuSet &rank, unsigned index) {
        std::vector<std::vector<uint32_t>> got(rank.dpus().size(), std::vector<uint32_t>(N));
        rank.copy(got, "output");
        uint32_t sum = 0;
        for (auto &v : got)
            for (uint32_t x : v)
                sum += x;
        rank_sums.push_back(sum + 0 * index);
    });
    async.sync();
    uint32_t want = 0;
    for (size_t d = 0; d < nr; d++)
        for (uint32_t x : expected(inputs[d], 5, 100 + static_cast<uint32_t>(d)))
            want += x;
    check("async(): copy, exec, call on the rank, sync", rank_sums.size() == 1 && rank_sums[0] == want);
    if (rank_sums.size() != 1 || rank_sums[0] != want)
        std::cout << "    " << rank_sums.size() << " callback(s), sum " << (rank_sums.empty() ? 0 : rank_sums[0])
                  << ", expected " << want << "\n";

    // Errors: DpuError with the SDK's code and text.
    try {
        system.copy("no_such_symbol", std::vector<uint32_t>{ 1 });
        check("copy to an unknown symbol throws", false);
    } catch (const dpu::DpuError &e) {
        check(std::string("copy to an unknown symbol throws DpuError (") + e.what() + ")",
            e.code() == DPU_ERR_UNKNOWN_SYMBOL && std::strlen(e.what()) > 0);
    }
    try {
        system.load("./bin/no_such_program");
        check("load of a missing file throws", false);
    } catch (const dpu::DpuError &e) {
        check("load of a missing file throws DpuError ELF_NO_SUCH_FILE", e.code() == DPU_ERR_ELF_NO_SUCH_FILE);
    }
    try {
        std::vector<std::vector<uint32_t>> ragged{ { 1, 2 }, { 1 }, { 1, 2 }, { 1, 2 } };
        system.copy("input", ragged);
        check("per-DPU buffers of different sizes throw", false);
    } catch (const dpu::DpuError &e) {
        check("per-DPU buffers of different sizes throw DpuError INVALID_MEMORY_TRANSFER",
            e.code() == DPU_ERR_INVALID_MEMORY_TRANSFER);
    }
    try {
        auto too_many = DpuSet::allocate(100000);
        check("allocate(100000) throws", false);
    } catch (const dpu::DpuError &e) {
        check("allocate(100000) throws DpuError ALLOCATION", e.code() == DPU_ERR_ALLOCATION);
    }

    // A set moved out of a function and freed by its destructor; ranks allocation.
    {
        auto ranks = DpuSet::allocateRanks(1, "nrDpusPerRank=8");
        check("allocateRanks(1) with nrDpusPerRank=8: 8 DPUs", ranks.dpus().size() == 8);
    }
    std::cout << (failures ? "FAIL" : "OK") << " C++ host API\n";
    return failures != 0;
}
