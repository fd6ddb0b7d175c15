/* More code than the 24 KiB IRAM: must still link (the loader reports the overflow). */
#include <stdint.h>
#include <attributes.h>
__host volatile uint32_t v[64];
#define STEP(i) v[(i) & 63] = v[((i) * 7) & 63] * 3 + v[((i) * 13) & 63] + (i);
#define STEP10(i) STEP(i) STEP(i + 1) STEP(i + 2) STEP(i + 3) STEP(i + 4) STEP(i + 5) STEP(i + 6) STEP(i + 7) STEP(i + 8) STEP(i + 9)
#define STEP100(i) STEP10(i) STEP10(i + 10) STEP10(i + 20) STEP10(i + 30) STEP10(i + 40) STEP10(i + 50) STEP10(i + 60) STEP10(i + 70) STEP10(i + 80) STEP10(i + 90)
int main(void)
{
    STEP100(0) STEP100(100) STEP100(200) STEP100(300) STEP100(400) STEP100(500) STEP100(600)
    STEP100(700) STEP100(800) STEP100(900) STEP100(1000) STEP100(1100) STEP100(1200)
    return 0;
}
