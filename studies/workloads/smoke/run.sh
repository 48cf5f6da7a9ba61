# The smoke study's workload: two short phases; WORD comes from the study.
hsmark phase "hello"
echo "word is $WORD"
hsmark phase "count"
i=0
while [ "$i" -lt 20 ]; do
    i=$((i + 1))
done
echo "counted to $i on $(grep -c ^processor /proc/cpuinfo) harts"
