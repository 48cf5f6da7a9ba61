# The P87 console workload: each step of a short shell session between phase
# markers, so the host can attribute the console byte path's cost per step.
# Run it as a directory workload (this file is /workload/run.sh in the guest).
hsmark phase "shell banner"
echo "hartscope p87 shell workload"

hsmark phase "echo"
echo "hello from the guest shell"

hsmark phase "uname -a"
uname -a

hsmark phase "ls /bin /usr/share"
ls /bin /usr/share

hsmark phase "cat sample"
cat /workload/sample.txt

hsmark phase "tmp file"
touch /tmp/p87.txt
echo "written by the p87 workload" > /tmp/p87.txt
cat /tmp/p87.txt
rm /tmp/p87.txt

hsmark phase "ash loop"
i=0
while [ "$i" -lt 8 ]; do
    echo "iteration $i" > /tmp/p87-loop.txt
    cat /tmp/p87-loop.txt
    i=$((i + 1))
done
rm -f /tmp/p87-loop.txt

hsmark phase "final marker"
echo "p87 workload done"
