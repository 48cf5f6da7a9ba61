# The DMA-interrupt study's workload (studies/dma-irq.toml), after the Plan 9
# SPI seed: the real-time loop (rtloop: SCHED_DEADLINE, 1 ms period, one
# device operation per period) pinned to each hart in turn, with a busy
# spinner on every other hart. Set by the study:
#   ITERATIONS  periods per hart
#   DEVICE      rtloop's device (spi:/dev/spidev0.0 or gpio:/dev/gpiochip0:LINE)
#   HARTS       the harts to run the loop on, in order
#   ROUTE       "default" (the PLIC route Linux chose) or "local": before each
#               loop, steer the DMA controller's interrupt to the loop's hart
#               through /proc/irq/N/smp_affinity
#   HART0_LOAD  hart 0's load when the loop is elsewhere: "spin" (a
#               normal-priority busy loop) or "fifo PRIO BUSY_US PERIOD_US"
#               (a SCHED_FIFO task busy BUSY_US of every PERIOD_US)
: "${ITERATIONS:=50}" "${DEVICE:=spi:/dev/spidev0.0}" "${HARTS:=0 1 2 3}" "${ROUTE:=default}" "${HART0_LOAD:=spin}"
ncpu=$(grep -c ^processor /proc/cpuinfo)
# The DMA controller's Linux interrupt number (dw-axi-dmac requests it under its module name).
dma_irq=$(awk '/dw_axi_dmac|dw-axi-dmac/ { sub(":", "", $1); print $1; exit }' /proc/interrupts)
echo "dma-irq: $ncpu harts, $ITERATIONS periods per hart, device $DEVICE, route $ROUTE, hart 0 load '$HART0_LOAD', DMA irq ${dma_irq:-none}"
grep -E 'spi|dma|gpio' /proc/interrupts

for hart in $HARTS; do
    pids=""
    cpu=0
    while [ "$cpu" -lt "$ncpu" ]; do
        if [ "$cpu" != "$hart" ]; then
            if [ "$cpu" = 0 ] && [ "$HART0_LOAD" != spin ]; then
                spin 0 $HART0_LOAD &
            else
                spin "$cpu" &
            fi
            pids="$pids $!"
        fi
        cpu=$((cpu + 1))
    done
    if [ "$ROUTE" = local ] && [ -n "$dma_irq" ]; then
        printf '%x\n' $((1 << hart)) > "/proc/irq/$dma_irq/smp_affinity"
        echo "dma-irq: DMA interrupt $dma_irq routed to hart $hart (effective $(cat /proc/irq/$dma_irq/effective_affinity_list 2>/dev/null))"
    fi
    rtloop "$hart" "$ITERATIONS" "$DEVICE" || { echo "dma-irq: rtloop on hart $hart failed"; exit 1; }
    kill $pids
    wait 2>/dev/null
done
grep -E 'spi|dma|gpio|IPI' /proc/interrupts
echo "dma-irq workload done"
