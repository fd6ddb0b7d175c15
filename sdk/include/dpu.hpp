/* OpenPIM: the UPMEM SDK's C++ host API (namespace dpu: DpuSet, DpuSetAsync, DpuProgram,
 * DpuSymbol, DpuError), header-only over the C API of <dpu.h>. Same classes, methods and
 * overloads as the SDK's; every failure throws dpu::DpuError carrying the SDK's code.
 *
 *   auto system = dpu::DpuSet::allocate(4, "nrJobsPerRank=64");
 *   system.load("./dpu_prog");
 *   system.copy("input", std::vector<uint32_t>(16, 7));   // the same data to every DPU
 *   system.exec();
 *   std::vector<std::vector<uint32_t>> out(system.dpus().size(), std::vector<uint32_t>(16));
 *   system.copy(out, "output");                            // one buffer per DPU
 *   system.log(std::cout);
 */
#ifndef OPENPIM_DPU_HPP
#define OPENPIM_DPU_HPP

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <dpu.h>
#include <dpu_management.h>

namespace dpu {

/** Allocate every available DPU (DpuSet::allocate) or rank (DpuSet::allocateRanks). */
const unsigned ALLOCATE_ALL = DPU_ALLOCATE_ALL;

/** What every method throws when the C API reports an error. */
class DpuError : public std::exception {
public:
    explicit DpuError(dpu_error_t code)
        : code_(code)
        , text_(describe(code))
    {
    }

    /** The SDK's description of the error. */
    const char *what() const noexcept override { return text_.c_str(); }

    /** The C API's error code (OpenPIM addition). */
    dpu_error_t code() const noexcept { return code_; }

    /** Throws DpuError(code) unless code is DPU_OK. */
    static void throwOnErr(dpu_error_t code)
    {
        if (code != DPU_OK)
            throw DpuError(code);
    }

private:
    static std::string describe(dpu_error_t code)
    {
        char *text = dpu_error_to_string(code);
        std::string copy = text != nullptr ? text : "unknown DPU error";
        std::free(text);
        return copy;
    }

    dpu_error_t code_;
    std::string text_;
};

/** A symbol of a DPU program (address and size). */
class DpuSymbol {
    friend class DpuProgram;
    friend class DpuSetOps;

public:
    DpuSymbol(unsigned address, unsigned size)
    {
        symbol_.address = address;
        symbol_.size = size;
    }

private:
    DpuSymbol() { symbol_.address = symbol_.size = 0; }
    struct dpu_symbol_t symbol_;
};

/** A program loaded by DpuSet::load. */
class DpuProgram {
    friend class DpuSet;

public:
    /** The symbol `name`; throws DpuError (DPU_ERR_UNKNOWN_SYMBOL) when there is none. */
    DpuSymbol get(const std::string &name)
    {
        DpuSymbol symbol;
        DpuError::throwOnErr(dpu_get_symbol(program_, name.c_str(), &symbol.symbol_));
        return symbol;
    }

private:
    struct dpu_program_t *program_ = nullptr;
};

class DpuSet;
class DpuSetAsync;

/** The function DpuSetAsync::call runs: (the rank or set, its index). */
using CallbackFn = std::function<void(DpuSet &, unsigned)>;

/** The operations a set runs synchronously (DpuSet) or queues (DpuSetAsync). */
class DpuSetOps {
    friend class DpuSet;
    friend class DpuSetAsync;

public:
    /* ---- the same host buffer to every DPU (dpu_broadcast_to) ---- */
    template <typename T>
    void copy(const std::string &dst, unsigned offset, const std::vector<T> &src, unsigned size)
    {
        DpuError::throwOnErr(dpu_broadcast_to(set_, dst.c_str(), offset, src.data(), size, xferFlags()));
    }
    template <typename T> void copy(const std::string &dst, unsigned offset, const std::vector<T> &src)
    {
        copy(dst, offset, src, bytes(src));
    }
    template <typename T> void copy(const std::string &dst, const std::vector<T> &src, unsigned size)
    {
        copy(dst, 0, src, size);
    }
    template <typename T> void copy(const std::string &dst, const std::vector<T> &src) { copy(dst, 0, src, bytes(src)); }
    template <typename T> void copy(DpuSymbol &dst, unsigned offset, const std::vector<T> &src, unsigned size)
    {
        DpuError::throwOnErr(dpu_broadcast_to_symbol(set_, dst.symbol_, offset, src.data(), size, xferFlags()));
    }
    template <typename T> void copy(DpuSymbol &dst, unsigned offset, const std::vector<T> &src)
    {
        copy(dst, offset, src, bytes(src));
    }
    template <typename T> void copy(DpuSymbol &dst, const std::vector<T> &src, unsigned size) { copy(dst, 0, src, size); }
    template <typename T> void copy(DpuSymbol &dst, const std::vector<T> &src) { copy(dst, 0, src, bytes(src)); }

    /* ---- one host buffer per DPU, to the DPUs (dpu_prepare_xfer + dpu_push_xfer) ---- */
    template <typename T>
    void copy(const std::string &dst, unsigned offset, const std::vector<std::vector<T>> &src, unsigned size)
    {
        prepare(src);
        DpuError::throwOnErr(dpu_push_xfer(set_, DPU_XFER_TO_DPU, dst.c_str(), offset, size, xferFlags()));
    }
    template <typename T> void copy(const std::string &dst, unsigned offset, const std::vector<std::vector<T>> &src)
    {
        copy(dst, offset, src, commonBytes(src));
    }
    template <typename T> void copy(const std::string &dst, const std::vector<std::vector<T>> &src, unsigned size)
    {
        copy(dst, 0, src, size);
    }
    template <typename T> void copy(const std::string &dst, const std::vector<std::vector<T>> &src)
    {
        copy(dst, 0, src, commonBytes(src));
    }
    template <typename T>
    void copy(DpuSymbol &dst, unsigned offset, const std::vector<std::vector<T>> &src, unsigned size)
    {
        prepare(src);
        DpuError::throwOnErr(dpu_push_xfer_symbol(set_, DPU_XFER_TO_DPU, dst.symbol_, offset, size, xferFlags()));
    }
    template <typename T> void copy(DpuSymbol &dst, unsigned offset, const std::vector<std::vector<T>> &src)
    {
        copy(dst, offset, src, commonBytes(src));
    }
    template <typename T> void copy(DpuSymbol &dst, const std::vector<std::vector<T>> &src, unsigned size)
    {
        copy(dst, 0, src, size);
    }
    template <typename T> void copy(DpuSymbol &dst, const std::vector<std::vector<T>> &src)
    {
        copy(dst, 0, src, commonBytes(src));
    }

    /* ---- one host buffer per DPU, from the DPUs ---- */
    template <typename T>
    void copy(std::vector<std::vector<T>> &dst, unsigned size, const std::string &src, unsigned offset)
    {
        prepare(dst);
        DpuError::throwOnErr(dpu_push_xfer(set_, DPU_XFER_FROM_DPU, src.c_str(), offset, size, xferFlags()));
    }
    template <typename T> void copy(std::vector<std::vector<T>> &dst, unsigned size, const std::string &src)
    {
        copy(dst, size, src, 0);
    }
    template <typename T> void copy(std::vector<std::vector<T>> &dst, const std::string &src, unsigned offset)
    {
        copy(dst, commonBytes(dst), src, offset);
    }
    template <typename T> void copy(std::vector<std::vector<T>> &dst, const std::string &src)
    {
        copy(dst, commonBytes(dst), src, 0);
    }
    template <typename T>
    void copy(std::vector<std::vector<T>> &dst, unsigned size, DpuSymbol &src, unsigned offset)
    {
        prepare(dst);
        DpuError::throwOnErr(dpu_push_xfer_symbol(set_, DPU_XFER_FROM_DPU, src.symbol_, offset, size, xferFlags()));
    }
    template <typename T> void copy(std::vector<std::vector<T>> &dst, unsigned size, DpuSymbol &src)
    {
        copy(dst, size, src, 0);
    }
    template <typename T> void copy(std::vector<std::vector<T>> &dst, DpuSymbol &src, unsigned offset)
    {
        copy(dst, commonBytes(dst), src, offset);
    }
    template <typename T> void copy(std::vector<std::vector<T>> &dst, DpuSymbol &src)
    {
        copy(dst, commonBytes(dst), src, 0);
    }

    /** Runs the loaded program (synchronously, or queued on a DpuSetAsync). */
    void exec() { DpuError::throwOnErr(dpu_launch(set_, async_ ? DPU_ASYNCHRONOUS : DPU_SYNCHRONOUS)); }

    /** The C set this object stands for, to mix with the C API (OpenPIM addition). */
    struct dpu_set_t cSet() const { return set_; }

protected:
    DpuSetOps(struct dpu_set_t set, bool async)
        : set_(set)
        , async_(async)
    {
    }

    struct dpu_set_t set_;
    bool async_;

private:
    dpu_xfer_flags_t xferFlags() const { return async_ ? DPU_XFER_ASYNC : DPU_XFER_DEFAULT; }

    template <typename T> static unsigned bytes(const std::vector<T> &v)
    {
        return static_cast<unsigned>(v.size() * sizeof(T));
    }

    /* The size of per-DPU buffers, which must all hold the same number of elements. */
    template <typename T> static unsigned commonBytes(const std::vector<std::vector<T>> &buffers)
    {
        if (buffers.empty())
            throw DpuError(DPU_ERR_INVALID_MEMORY_TRANSFER);
        for (const auto &b : buffers)
            if (b.size() != buffers[0].size())
                throw DpuError(DPU_ERR_INVALID_MEMORY_TRANSFER);
        return bytes(buffers[0]);
    }

    /* One buffer per DPU of the set, in DPU_FOREACH order. */
    template <typename T> void prepare(const std::vector<std::vector<T>> &buffers)
    {
        uint32_t nr_dpus = 0;
        DpuError::throwOnErr(dpu_get_nr_dpus(set_, &nr_dpus));
        if (buffers.size() < nr_dpus)
            throw DpuError(DPU_ERR_INVALID_MEMORY_TRANSFER);
        struct dpu_set_t dpu;
        uint32_t i;
        DPU_FOREACH (set_, dpu, i) {
            DpuError::throwOnErr(dpu_prepare_xfer(dpu, const_cast<T *>(buffers[i].data())));
        }
    }
};

/** A set of DPUs; its operations are synchronous. It frees the DPUs it allocated. */
class DpuSet : public DpuSetOps {
    friend class DpuSetAsync;

public:
    DpuSet(const DpuSet &) = delete;
    DpuSet &operator=(const DpuSet &) = delete;
    DpuSet(DpuSet &&other) noexcept
        : DpuSetOps(other.set_, false)
        , owner_(other.owner_)
        , dpus_(std::move(other.dpus_))
        , ranks_(std::move(other.ranks_))
        , children_(std::move(other.children_))
    {
        other.owner_ = false;
    }
    ~DpuSet()
    {
        if (owner_)
            dpu_free(set_);
    }

    /** The DPUs of the set, each as a one-DPU set. */
    std::vector<DpuSet *> &dpus() { return dpus_; }
    /** The ranks of the set, each as a set. */
    std::vector<DpuSet *> &ranks() { return ranks_; }

    static DpuSet allocate(unsigned nrDpus = ALLOCATE_ALL, const std::string &profile = "")
    {
        struct dpu_set_t set;
        DpuError::throwOnErr(dpu_alloc(nrDpus, profile.c_str(), &set));
        return DpuSet(set, true, true);
    }
    static DpuSet allocateRanks(unsigned nrRanks = ALLOCATE_ALL, const std::string &profile = "")
    {
        struct dpu_set_t set;
        DpuError::throwOnErr(dpu_alloc_ranks(nrRanks, profile.c_str(), &set));
        return DpuSet(set, true, true);
    }

    /** Loads the program `executable` on every DPU of the set. */
    DpuProgram load(const std::string &executable)
    {
        DpuProgram program;
        DpuError::throwOnErr(dpu_load(set_, executable.c_str(), &program.program_));
        return program;
    }

    /** Writes each DPU's printf output of its last run to `out`, after the SDK's
     * `=== DPU#0x<id> ===` line. */
    void log(std::ostream &out)
    {
        for (DpuSet *dpu : dpus_) {
            char *text = nullptr;
            size_t len = 0;
            FILE *stream = open_memstream(&text, &len);
            if (stream == nullptr)
                throw DpuError(DPU_ERR_SYSTEM);
            dpu_error_t err = dpu_log_read(dpu->set_, stream);
            std::fclose(stream);
            if (text != nullptr)
                out.write(text, static_cast<std::streamsize>(len));
            std::free(text);
            DpuError::throwOnErr(err);
        }
    }

    /** The asynchronous interface of this set (operations queued on its ranks). */
    DpuSetAsync async();

private:
    /* `owner`: frees the C set when destroyed; `children`: builds the rank and DPU sets. */
    DpuSet(struct dpu_set_t set, bool owner, bool children)
        : DpuSetOps(set, false)
        , owner_(owner)
    {
        if (!children)
            return;
        struct dpu_set_t rank, dpu;
        DPU_RANK_FOREACH (set, rank) {
            children_.emplace_back(new DpuSet(rank, false, false));
            DpuSet *r = children_.back().get();
            r->ranks_.push_back(r);
            DPU_FOREACH (rank, dpu) {
                children_.emplace_back(new DpuSet(dpu, false, false));
                DpuSet *d = children_.back().get();
                d->dpus_.push_back(d);
                d->ranks_.push_back(r);
                r->dpus_.push_back(d);
                dpus_.push_back(d);
            }
            ranks_.push_back(r);
        }
    }

    bool owner_;
    std::vector<DpuSet *> dpus_;
    std::vector<DpuSet *> ranks_;
    std::vector<std::unique_ptr<DpuSet>> children_;
};

/** A set's operations queued on its ranks (DpuSet::async); sync() waits for them. */
class DpuSetAsync : public DpuSetOps {
    friend class DpuSet;

public:
    /** Calls `callback` on each rank (or once on the whole set with `singleCall`), in the
     * ranks' queues; `isBlocking`: later operations on the rank wait for it. */
    void call(const CallbackFn &callback, bool isBlocking, bool singleCall)
    {
        int flags = DPU_CALLBACK_ASYNC;
        if (!isBlocking)
            flags |= DPU_CALLBACK_NONBLOCKING;
        if (singleCall)
            flags |= DPU_CALLBACK_SINGLE_CALL;
        uint32_t nr_ranks = 1;
        if (!singleCall)
            DpuError::throwOnErr(dpu_get_nr_ranks(set_, &nr_ranks));
        auto *context = new Context{ callback, { nr_ranks } };
        dpu_error_t err = dpu_callback(set_, trampoline, context, static_cast<dpu_callback_flags_t>(flags));
        if (err != DPU_OK) {
            delete context;
            throw DpuError(err);
        }
    }
    void call(const CallbackFn &callback) { call(callback, true, false); }

    /** Waits for every queued operation; throws the first error one of them met. */
    void sync() { DpuError::throwOnErr(dpu_sync(set_)); }

private:
    struct Context {
        CallbackFn callback;
        std::atomic<uint32_t> left;
    };

    explicit DpuSetAsync(DpuSet *set)
        : DpuSetOps(set->set_, true)
    {
    }

    static dpu_error_t trampoline(struct dpu_set_t set, uint32_t index, void *arg)
    {
        auto *context = static_cast<Context *>(arg);
        dpu_error_t result = DPU_OK;
        try {
            DpuSet view(set, false, true);
            context->callback(view, index);
        } catch (const DpuError &e) {
            result = e.code();
        } catch (...) {
            result = DPU_ERR_SYSTEM;
        }
        if (--context->left == 0)
            delete context;
        return result;
    }
};

inline DpuSetAsync DpuSet::async() { return DpuSetAsync(this); }

} // namespace dpu

#endif /* OPENPIM_DPU_HPP */
