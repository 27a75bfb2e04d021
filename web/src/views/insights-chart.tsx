import { BarController, BarElement, CategoryScale, Chart, Legend, LinearScale, Tooltip } from 'chart.js';
import { useEffect, useRef } from 'preact/hooks';

// Only the parts the page draws (bar charts), so the bundle carries no other chart types.
Chart.register(BarController, BarElement, CategoryScale, LinearScale, Tooltip, Legend);

export type BarSeries = { label: string; values: (number | null)[]; color: string };

/**
 * A bar chart drawn by Chart.js on a canvas: one bar per label and series. `max` fixes the value
 * axis (1 for rates). Redrawn when its data changes; destroyed with the view.
 */
export function BarChart({
  id,
  title,
  labels,
  series,
  max,
}: {
  id: string;
  title: string;
  labels: string[];
  series: BarSeries[];
  max?: number;
}) {
  const canvas = useRef<HTMLCanvasElement>(null);
  useEffect(() => {
    if (!canvas.current) return;
    const chart = new Chart(canvas.current, {
      type: 'bar',
      data: { labels, datasets: series.map((s) => ({ label: s.label, data: s.values, backgroundColor: s.color })) },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        scales: { y: { beginAtZero: true, ...(max !== undefined && { max }) } },
        plugins: { legend: { display: series.length > 1 } },
      },
    });
    return () => chart.destroy();
  }, [JSON.stringify({ labels, series, max })]);
  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      <div class="chart-box">
        <canvas id={id} role="img" aria-label={title} ref={canvas} />
      </div>
    </figure>
  );
}
