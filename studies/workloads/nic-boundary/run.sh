# The nic-boundary study's workload (the Genode/Pandaboard seed's NIC part):
# bulk TCP between the guest and the network peer at each packet size in
# SIZES (the TCP maximum segment size, both ways), receive then transmit,
# SIZE_KIB per transfer; then UDP the same way (datagrams of SIZE bytes:
# the peer's source sends as fast as the wire takes them, so a receiver
# that cannot keep up loses datagrams, counted as udp_rx_lost.SIZE).
#
#   MODE=native  Linux's ethoc driver, the stack on eth0;
#   MODE=uio     nicd (guest/workloads/nicd.c) owns the NIC through
#                /dev/uio0 and hands frames to tap0 through its packet
#                stream, with NICD_OPTS (allocator, copy, notification).
#   SOCKBUF      ttcp's socket buffers in bytes (empty: the kernel's own,
#                autotuned).
#
# Each transfer is its own phase ("rx 1024", "tx 1024", "udp rx 1024", ...:
# exactly ttcp's timed interval), so hartscope's busy cycles per phase are
# the CPU time of that transfer; ttcp's figures go out on the metrics
# channel as rx_mibps.SIZE / tx_mibps.SIZE / udp_rx_mibps.SIZE /
# udp_tx_mibps.SIZE (MiB per second of guest time; a UDP sender's time is
# its sending's) and udp_rx_lost.SIZE (datagrams).
: "${MODE:=native}"
: "${NICD_OPTS:=}"
: "${SOCKBUF:=}"
: "${SIZES:=1024 1450}"
: "${SIZE_KIB:=1024}"
metrics=/tmp/nic.metrics
: > "$metrics"
count=$((SIZE_KIB / 8)); [ "$count" -ge 1 ] || count=1
buf=""; [ -n "$SOCKBUF" ] && buf="-b $SOCKBUF"

if [ "$MODE" = uio ]; then
    [ -e /dev/uio0 ] || { echo "nic-boundary: no /dev/uio0 (boot with uio_pdrv_genirq.of_id=generic-uio and driver = \"uio\")"; exit 1; }
    nicd $NICD_OPTS > /tmp/nicd.log 2>&1 &
    nicd_pid=$!
    i=0
    while ! grep -q "nicd: up" /tmp/nicd.log && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done
    grep -q "nicd: up" /tmp/nicd.log || { echo "nic-boundary: nicd did not come up:"; cat /tmp/nicd.log; exit 1; }
    IF=tap0
else
    IF=eth0
fi
ip link set "$IF" up && ip addr add 10.0.2.15/24 dev "$IF" || exit 1
ping -c 1 -W 2 10.0.2.2 > /dev/null || { echo "nic-boundary: the peer does not answer ping on $IF"; exit 1; }
echo "nic-boundary: $MODE on $IF${NICD_OPTS:+ ($NICD_OPTS)}, socket buffers ${SOCKBUF:-kernel default}, ${SIZE_KIB} KiB per transfer"

# One ttcp; prints MiB/s of ttcp's own clock (guest time) or fails the run.
transfer() {
    dir=$1 size=$2
    case $dir in
    rx) out=$(ttcp -c 10.0.2.2 -p 5001 -l 8192 -n "$count" -m "$size" $buf -P "rx $size" 2>&1) ;;
    tx) out=$(ttcp -t 10.0.2.2 -p 5002 -l 8192 -n "$count" -m "$size" $buf -P "tx $size" 2>&1) ;;
    udp_rx) out=$(ttcp -u -c 10.0.2.2 -p 5003 -l "$size" -n $((SIZE_KIB * 1024 / size)) $buf -P "udp rx $size" 2>&1) ;;
    udp_tx) out=$(ttcp -u -t 10.0.2.2 -p 5004 -l "$size" -n $((SIZE_KIB * 1024 / size)) $buf -P "udp tx $size" 2>&1) ;;
    esac || { echo "nic-boundary: ttcp $dir $size failed: $out" >&2; exit 1; }
    echo "$out" | sed 's/^/  /' >&2
    lost=$(echo "$out" | sed -n 's/^ttcp-r: [0-9]* datagrams of [0-9]*, \([0-9]*\) lost$/\1/p')
    [ -n "$lost" ] && echo "udp_rx_lost.$size $lost" >> "$metrics"
    bps=$(echo "$out" | sed -n 's/^ttcp-[rt]: [0-9]* bytes in [0-9.]* s = \([0-9.]*\) bytes\/s$/\1/p')
    [ -n "$bps" ] || { echo "nic-boundary: no rate in ttcp's output: $out" >&2; exit 1; }
    awk -v b="$bps" 'BEGIN { printf "%.3f", b / 1048576 }'
}

for dir in rx tx udp_rx udp_tx; do
    for size in $SIZES; do
        mibps=$(transfer "$dir" "$size") || exit 1
        echo "nic-boundary: $dir $size $mibps MiB/s"
        echo "${dir}_mibps.$size $mibps" >> "$metrics"
    done
done
hsmark phase "nic done"
hsmark send "$metrics" metrics
if [ -n "${nicd_pid:-}" ]; then
    kill "$nicd_pid"; wait "$nicd_pid"
    cat /tmp/nicd.log
fi
echo "nic-boundary workload done"
