# boot: the guest kernel enumerates the emulated ConnectX-5 behind the PCIe root port.

dev=$(cx_device)
check "ConnectX-5 15b3:1017 is in /sys/bus/pci/devices" test -n "$dev"
check_output "its class is InfiniBand controller (0x020700)" '^0x020700$' cat "$dev/class"
check_output "BAR0 is 32 MiB" '^32$' sh -c "echo \$(( ( \$(sed -n 1p $dev/resource | awk '{print \$2}') - \$(sed -n 1p $dev/resource | awk '{print \$1}') + 1 ) >> 20 ))"
check_output "config space lists the PCIe (10) and MSI-X (11) capabilities" '^10 11$' pci_cap_ids "$dev"
dmesg_clean "boot log has no warnings"
