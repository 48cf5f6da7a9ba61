# The sd-block study's workload (the Genode/Pandaboard seed's SD-card
# benchmark, as its native-Linux baseline ran it): trixie's coreutils dd
# (BusyBox dd has no direct flag) reads and then writes the first SIZE_KIB
# KiB of the disk with O_DIRECT at each block size in BS, so neither the
# page cache nor request merging hides the device. Each transfer is its own
# phase ("read 4096", "write 4096") for hartscope's profile and cycle
# counts; dd's own figures go out on the metrics channel
# (read_mibps.BS, write_mibps.BS: MiB per second of guest time).
: "${DEV:=/dev/mmcblk0}"
: "${SIZE_KIB:=1024}"
: "${BS:=512 1024 4096 16384 65536 262144 1048576}"
i=0
while [ ! -b "$DEV" ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done
[ -b "$DEV" ] || { echo "sd-block: no $DEV"; ls /sys/block; exit 1; }
echo "sd-block: $DEV, $(cat /sys/block/${DEV#/dev/}/size) sectors, ${SIZE_KIB} KiB per transfer"
metrics=/tmp/sd-block.metrics
: > "$metrics"
bytes=$((SIZE_KIB * 1024))

# One dd; prints MiB/s of dd's own clock (guest time) or fails the run.
run_dd() {
    dir=$1 bs=$2
    count=$((bytes / bs)); [ "$count" -ge 1 ] || count=1
    if [ "$dir" = read ]; then
        out=$(/usr/bin/dd if="$DEV" of=/dev/null bs="$bs" count="$count" iflag=direct 2>&1)
    else
        out=$(/usr/bin/dd if=/dev/zero of="$DEV" bs="$bs" count="$count" oflag=direct 2>&1)
    fi || { echo "sd-block: dd $dir bs=$bs failed: $out"; exit 1; }
    secs=$(echo "$out" | sed -n 's/.* copied, \([0-9.e+-]*\) s,.*/\1/p')
    moved=$((count * bs))
    [ -n "$secs" ] || { echo "sd-block: no time in dd's output: $out"; exit 1; }
    awk -v b="$moved" -v s="$secs" 'BEGIN { printf "%.3f", b / s / 1048576 }'
}

for dir in read write; do
    for bs in $BS; do
        hsmark phase "$dir $bs"
        mibps=$(run_dd "$dir" "$bs") || exit 1
        echo "sd-block: $dir bs=$bs $mibps MiB/s"
        echo "${dir}_mibps.$bs $mibps" >> "$metrics"
    done
done
hsmark phase "sd-block done"
hsmark send "$metrics" metrics
echo "sd-block workload done"
