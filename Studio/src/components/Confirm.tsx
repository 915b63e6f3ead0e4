import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';

interface Options { title: string; message: string; confirm: string; danger?: boolean; typeToConfirm?: string }

function ConfirmDialog({ options, done }: { options: Options; done: (ok: boolean) => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  const [typed, setTyped] = useState('');
  useEffect(() => {
    ref.current?.showModal();
  }, []);
  const allowed = !options.typeToConfirm || typed === options.typeToConfirm;
  return (
    <dialog ref={ref} aria-labelledby="confirm-title" onCancel={() => done(false)}>
      <h2 id="confirm-title">{options.title}</h2>
      <p>{options.message}</p>
      {options.typeToConfirm && (
        <div class="form-row">
          <label for="confirm-typed">Type <strong>{options.typeToConfirm}</strong> to confirm</label>
          <input id="confirm-typed" value={typed} onInput={(e) => setTyped((e.target as HTMLInputElement).value)} autoFocus />
        </div>
      )}
      <div class="toolbar" style={{ justifyContent: 'flex-end', marginBottom: 0 }}>
        <button onClick={() => done(false)} autoFocus={!options.typeToConfirm}>Cancel</button>
        <button class={options.danger ? 'danger' : 'primary'} disabled={!allowed} onClick={() => done(true)}>{options.confirm}</button>
      </div>
    </dialog>
  );
}

/** Asks before a destructive action; resolves true when the person confirmed. */
export function confirmAction(options: Options): Promise<boolean> {
  return new Promise((resolve) => {
    const host = document.createElement('div');
    document.body.appendChild(host);
    const done = (ok: boolean) => {
      render(null, host);
      host.remove();
      resolve(ok);
    };
    render(<ConfirmDialog options={options} done={done} />, host);
  });
}
