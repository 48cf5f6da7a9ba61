# The sd-block study's workload (the Genode/Pandaboard seed's SD-card
# benchmark, as its native-Linux baseline ran it): trixie's coreutils dd
# (BusyBox dd has no direct flag) reads and then writes the first SIZE_KIB
# KiB of the disk with O_DIRECT at each block size in BS, so neither the
# page cache nor request merging hides the device. Each transfer is its own
# phase ("read 4096", "write 4096") for hartscope's profile and cycle
# counts; dd's own figures go out on the metrics channel
# (read_mibps.BS, write_mibps.BS: MiB per second of guest time), with the
# requests the device completed for each transfer (read_reqs.BS,
# write_reqs.BS, from the disk's /sys/block/*/stat): a transfer the block
# layer splits (more pages than the driver takes segments, or than a
# request may carry) costs a request set-up and an interrupt more.
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
stat=/sys/block/${DEV#/dev/}/stat
[ -r "$stat" ] || { echo "sd-block: no $stat"; exit 1; }
# Requests completed so far in direction $1 (stat's fields 1 and 5).
completed() {
    if [ "$1" = read ]; then awk '{ print $1 }' "$stat"; else awk '{ print $5 }' "$stat"; fi
}

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
        before=$(completed "$dir")
        mibps=$(run_dd "$dir" "$bs") || exit 1
        reqs=$(( $(completed "$dir") - before ))
        echo "sd-block: $dir bs=$bs $mibps MiB/s in $reqs requests"
        echo "${dir}_mibps.$bs $mibps" >> "$metrics"
        echo "${dir}_reqs.$bs $reqs" >> "$metrics"
    done
done
hsmark phase "sd-block done"
hsmark send "$metrics" metrics
echo "sd-block workload done"
