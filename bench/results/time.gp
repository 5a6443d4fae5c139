set terminal pngcairo size 1200,600 noenhanced
set output 'bench/results/time.png'
set datafile missing '?'
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key outside right top
set ylabel 'ns per operation (median) (log scale)'
set grid ytics
set xtics rotate by -20
set logscale y
set yrange [0.5:*]
plot for [i=2:7] 'bench/results/time.dat' using i:xtic(1) title columnheader(i)
