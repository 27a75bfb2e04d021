import { render } from 'preact';
import './style.css';
import { App } from './views/app.tsx';

render(<App />, document.getElementById('app')!);
