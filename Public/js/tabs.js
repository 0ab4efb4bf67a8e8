// The tabs: which panel is shown (remembered in the URL's hash), moved between with the arrow
// keys; on wide windows the event log stays beside the shown panel. Emits 'tab-shown'.

import { $ } from './dom.js';
import { emit } from './bus.js';

const TABS = ['clients', 'connections', 'documents', 'tree', 'rules', 'timeline', 'events'];
const wideQuery = window.matchMedia('(min-width: 1200px)');
let currentTab = 'clients';

/** Whether a panel is on screen now (the event log is always shown beside the others on wide windows). */
export function isShown(name) {
  if (document.hidden) return false;
  if (name === 'events' && wideQuery.matches) return true;
  return currentTab === name;
}

export function selectTab(name, { focus = false, updateHash = true } = {}) {
  if (!TABS.includes(name)) name = 'clients';
  if (name === 'events' && wideQuery.matches) name = currentTab === 'events' ? 'clients' : currentTab;
  currentTab = name;
  for (const t of TABS) {
    const tab = $('tab-' + t);
    const selected = t === name;
    tab.setAttribute('aria-selected', String(selected));
    tab.tabIndex = selected ? 0 : -1;
    $('panel-' + t).hidden = !(selected || (t === 'events' && wideQuery.matches));
  }
  document.body.classList.toggle('wide', wideQuery.matches);
  if (focus) $('tab-' + name).focus();
  if (updateHash && location.hash !== '#' + name) history.replaceState(null, '', '#' + name);
  emit('tab-shown', name);
}

$('tab-clients').parentElement.addEventListener('click', (e) => {
  const tab = e.target.closest('[role=tab]');
  if (tab) selectTab(tab.dataset.tab);
});
$('tab-clients').parentElement.addEventListener('keydown', (e) => {
  const visible = TABS.filter((t) => !(t === 'events' && wideQuery.matches));
  let i = visible.indexOf(currentTab);
  if (e.key === 'ArrowRight') i = (i + 1) % visible.length;
  else if (e.key === 'ArrowLeft') i = (i - 1 + visible.length) % visible.length;
  else if (e.key === 'Home') i = 0;
  else if (e.key === 'End') i = visible.length - 1;
  else return;
  e.preventDefault();
  selectTab(visible[i], { focus: true });
});
wideQuery.addEventListener('change', () => selectTab(currentTab, { updateHash: false }));
window.addEventListener('hashchange', () => selectTab(location.hash.slice(1)));
