# The spi-net-irq study's workload (the Openmoko seed): ttcp receives
# LEN x COUNT bytes from the network peer's TCP source (10.0.2.2:5001, on
# the ENC28J60's wire) and prints the seed's ttcp-r lines (KB/sec, its own
# user and system time), sending them on the metrics channel. The seed
# received 16 MB as 2048 x 8192; the study's default is a scaled 64 x 8192.
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
# One ping first, so ARP is settled before the measured transfer.
ping -c 1 -W 2 10.0.2.2 | grep -E 'packets'
ttcp -c 10.0.2.2 -p 5001 -l "${LEN:-8192}" -n "${COUNT:-64}"
echo "eth0: rx_packets $(cat /sys/class/net/eth0/statistics/rx_packets) rx_errors $(cat /sys/class/net/eth0/statistics/rx_errors) rx_dropped $(cat /sys/class/net/eth0/statistics/rx_dropped) tx_packets $(cat /sys/class/net/eth0/statistics/tx_packets)"
