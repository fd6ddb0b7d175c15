"""The scalability study (`openpim study scalability`): runs the workloads of workloads/ on
the emulator and their CPU baselines, and writes CSV data, figures and REPORT.md."""
