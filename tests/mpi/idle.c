/* The DPU program the collective's DPUs hold (the collective runs its own programs). */
int main(void)
{
    return 0;
}
