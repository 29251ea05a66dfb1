# The devices of the project's QEMU build (scripts/build-qemu): what
# scripts/guest-run's command line uses, nothing more. The PC machine
# (i440fx) brings the ISA serial port, the PIC, PIT, RTC and ACPI.
CONFIG_I440FX=y
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_SERIAL=y
CONFIG_VIRTIO_9P=y
# scripts/check-emulator ends its test program through isa-debug-exit.
CONFIG_ISA_DEBUG=y
