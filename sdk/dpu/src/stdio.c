/* OpenPIM DPU runtime: the printf family.
 *
 * The host formats the text: the PRINTF environment call keeps it for dpu_log_read and keeps
 * the account of the DPU's printf buffer (a ring of __stdout_buffer_size bytes; see
 * docs/internals/dpu-abi.md). What the DPU itself does for a call is the work the UPMEM
 * runtime's printf does, so that a call takes the time it takes on the hardware: under one
 * lock shared by all tasklets, the format is walked twice and the call encoded byte by byte
 * (a format section: each run of literal characters as "%s", each conversion as '%' and its
 * letters, a NUL; then an argument section: the raw arguments, the literal runs and their
 * NULs) into an 8-byte WRAM line, each full line written to MRAM by a DMA, the last one
 * padded. The lines all go to one 8-byte MRAM word (the ring's contents are the host's): the
 * DMA requests are the runtime's, and no MRAM of the program is touched. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <attributes.h>
#include <atomic_bit.h>
#include <mram.h>
#include <openpim_ecall.h>

ATOMIC_BIT_INIT(__stdout_lock);
static __dma_aligned uint8_t line[8];
static unsigned int line_used;
/* In a section of its own that the linker script does not KEEP (unlike user __mram_noinit
 * variables): when nothing reachable calls printf, --gc-sections drops it with printf and it
 * does not move __sys_used_mram_end. As with the UPMEM runtime's __stdout_buffer, only a
 * program that links printf has its MRAM heap further. */
__attribute__((__section__(".mram.sys.noinit"), __aligned__(8))) uint64_t __stdout_line;

static __attribute__((noinline)) void write_line(void)
{
    mram_write(line, &__stdout_line, sizeof(line));
    line_used = 0;
}

static __attribute__((noinline)) void put(unsigned int byte)
{
    line[line_used++] = (uint8_t)byte;
    if (line_used == sizeof(line))
        write_line();
}

static __attribute__((noinline)) void put_raw(const void *bytes, unsigned int n)
{
    const uint8_t *b = bytes;
    for (unsigned int i = 0; i < n; i++)
        put(b[i]);
}

static int is_letter(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Whether `p` starts a conversion (not "%%", not a '%' ending the format). */
static int conversion_at(const char *p)
{
    return p[0] == '%' && p[1] != '%' && p[1] != '\0';
}

static __attribute__((noinline)) void encode(const char *format, va_list args)
{
    int literal = 0;
    for (const char *p = format; *p; p++) {
        if (conversion_at(p)) {
            put('%');
            /* Its letters up to the conversion letter ('l' is a length), less 'z' and 'L'. */
            for (p++; *p; p++) {
                if (*p == 'z' || *p == 'L')
                    continue;
                put(*p == 'i' ? 'd' : *p);
                if (is_letter(*p) && *p != 'l')
                    break;
            }
            if (!*p)
                break;
            literal = 0;
            continue;
        }
        if (*p == '%' && !*++p)
            break;
        if (!literal) {
            put('%');
            put('s');
            literal = 1;
        }
    }
    put('\0');
    literal = 0;
    for (const char *p = format; *p; p++) {
        if (conversion_at(p)) {
            int wide = 0;
            for (p++; *p && (!is_letter(*p) || *p == 'l' || *p == 'L' || *p == 'z'); p++)
                wide |= *p == 'l' || *p == 'L';
            if (!*p)
                break;
            if (literal) {
                put('\0');
                literal = 0;
            }
            switch (*p) {
            case 's': {
                const char *s = va_arg(args, const char *);
                if (!s)
                    s = "(null)";
                while (*s)
                    put((uint8_t)*s++);
                put('\0');
                break;
            }
            case 'c':
                put((uint8_t)va_arg(args, int));
                break;
            case 'f':
            case 'e':
            case 'E':
            case 'g':
            case 'G': {
                double d = va_arg(args, double);
                put_raw(&d, sizeof(d));
                break;
            }
            default:
                if (wide) {
                    long long v = va_arg(args, long long);
                    put_raw(&v, sizeof(v));
                } else {
                    int v = va_arg(args, int);
                    put_raw(&v, sizeof(v));
                }
            }
            continue;
        }
        if (*p == '%' && !*++p)
            break;
        put((uint8_t)*p);
        literal = 1;
    }
    if (literal)
        put('\0');
    /* The last line, partial or empty, padded with zeros and written. */
    while (line_used < sizeof(line))
        line[line_used++] = 0;
    write_line();
}

int vprintf(const char *__restrict format, va_list args)
{
    ATOMIC_BIT_ACQUIRE(__stdout_lock);
    /* RV32 ILP32: a va_list is the WRAM address of the next argument slot. */
    __ecall2(__ECALL_PRINTF, (unsigned int)(uintptr_t)format, (unsigned int)(uintptr_t)args);
    encode(format, args);
    ATOMIC_BIT_RELEASE(__stdout_lock);
    return 0;
}

int printf(const char *__restrict format, ...)
{
    va_list args;
    va_start(args, format);
    vprintf(format, args);
    va_end(args);
    return 0;
}

int puts(const char *s)
{
    printf("%s\n", s);
    return 0;
}

int putchar(int c)
{
    printf("%c", c);
    return (unsigned char)c;
}
