"""A real browser for the tests of the pages the sandbox serves: Debian's ``chromium`` driven by Selenium
through Debian's ``chromium-driver``.

Nothing is downloaded: the browser and the driver are the system's (found on ``PATH``), and ``SE_OFFLINE``
keeps Selenium Manager from reaching out. A missing browser or driver is an error
(:class:`BrowserUnavailableError`), which the fixture turns into a failure, never a skip: ``scripts/setup``
installs both.

Host names under ``.test`` resolve to 127.0.0.1 inside the browser (``--host-resolver-rules``), so one
local server can stand for another site (``merchant.test``, ``attacker.test``): the browser then applies its
cross-site rules (``Sec-Fetch-Site: cross-site``, CSP origins) exactly as it would on the internet.

Screenshots go to :data:`SCREENSHOT_DIR`, which CI keeps as an artifact. Selenium is imported only when a
browser starts: tests/conftest.py imports this module, and the test runs of the installed wheel have no selenium.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.remote.webelement import WebElement

SCREENSHOT_DIR = Path(__file__).resolve().parents[2] / "build" / "artifacts" / "screenshots"
PAGE_LOAD_TIMEOUT = 20.0
"""Seconds a navigation may take before Selenium raises: a hung page fails the test instead of hanging it."""
NAVIGATION_TIMEOUT = 15.0
"""Seconds a click has to lead to a new page: on loopback it takes milliseconds; the margin is for a loaded CI."""
_WINDOW = "--window-size=900,700"
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


class BrowserUnavailableError(RuntimeError):
    pass


def _tool(name: str, package: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise BrowserUnavailableError(f"{name} is not on PATH: install Debian's {package} package "
                                      f"(apt-get install chromium chromium-driver; scripts/setup does)")
    return path


class Browser:
    """One headless chromium for the whole session; :meth:`reset` between tests."""

    def __init__(self, screenshot_dir: Path = SCREENSHOT_DIR) -> None:
        chromium, chromedriver = _tool("chromium", "chromium"), _tool("chromedriver", "chromium-driver")
        os.environ["SE_OFFLINE"] = "true"  # Selenium Manager must never try to download a browser or a driver
        try:
            from selenium import webdriver
            from selenium.webdriver.chrome.service import Service
        except ImportError:
            raise BrowserUnavailableError("selenium is not installed: pip install -e '.[dev]'") from None

        options = webdriver.ChromeOptions()
        options.binary_location = chromium
        for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", _WINDOW,
                         "--host-resolver-rules=MAP *.test 127.0.0.1"):
            options.add_argument(argument)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # the console, CSP refusals included
        self.driver: WebDriver = webdriver.Chrome(options=options, service=Service(executable_path=chromedriver))
        self.driver.set_page_load_timeout(PAGE_LOAD_TIMEOUT)
        self.screenshot_dir = screenshot_dir
        self.screenshot_dir.mkdir(parents=True, exist_ok=True)

    def reset(self) -> None:
        """A blank page, no cookies, an empty console: what one test did is not seen by the next."""
        self.driver.get("about:blank")
        self.driver.delete_all_cookies()
        self.console()

    def screenshot(self, name: str) -> Path:
        path = self.screenshot_dir / f"{_UNSAFE_NAME.sub('_', name)}.png"
        if not self.driver.save_screenshot(str(path)):
            raise RuntimeError(f"chromium could not save the screenshot {path}")
        return path

    def text(self) -> str:
        """The visible text of the page's body."""
        from selenium.webdriver.common.by import By

        return self.driver.find_element(By.TAG_NAME, "body").text

    def click(self, button_text: str) -> None:
        """Click the button labelled ``button_text`` and wait until the page it leads to has loaded; a click
        that leads nowhere (a navigation the browser refused) fails with what the browser's console said."""
        from selenium.webdriver.common.by import By

        self._leave_by(self.driver.find_element(By.XPATH, f"//button[normalize-space()='{button_text}']"),
                       button_text)

    def _leave_by(self, element: WebElement, label: str) -> None:
        from selenium.common.exceptions import TimeoutException
        from selenium.webdriver.support.wait import WebDriverWait

        element.click()
        try:
            WebDriverWait(self.driver, NAVIGATION_TIMEOUT).until(lambda _: _left(element))
        except TimeoutException:
            raise AssertionError(f"clicking {label!r} on {self.driver.current_url} led nowhere within "
                                 f"{NAVIGATION_TIMEOUT:g} s; the browser's console: {self.console()}") from None
        self.wait_loaded()

    def click_link(self, link_text: str) -> None:
        """Follow the link ``link_text`` and wait until the page it leads to has loaded."""
        from selenium.webdriver.common.by import By

        self._leave_by(self.driver.find_element(By.LINK_TEXT, link_text), link_text)

    def console(self) -> list[str]:
        """The console messages since the last call (the browser's own refusals among them)."""
        return [entry["message"] for entry in self.driver.get_log("browser")]

    def wait_for_title(self, title: str) -> None:
        """Wait until the page showing is ``title`` (a navigation the page started by itself)."""
        from selenium.common.exceptions import TimeoutException
        from selenium.webdriver.support.wait import WebDriverWait

        try:
            WebDriverWait(self.driver, NAVIGATION_TIMEOUT).until(lambda driver: driver.title == title)
        except TimeoutException:
            raise AssertionError(f"the browser is on {self.driver.current_url} ({self.driver.title!r}), not on a "
                                 f"page titled {title!r}; its console: {self.console()}") from None
        self.wait_loaded()

    def wait_loaded(self) -> None:
        from selenium.webdriver.support.wait import WebDriverWait

        WebDriverWait(self.driver, PAGE_LOAD_TIMEOUT).until(
            lambda driver: driver.execute_script("return document.readyState") == "complete")

    def close(self) -> None:
        self.driver.quit()


def _left(element: WebElement) -> bool:
    """Whether the page that held element is gone (selenium's staleness_of, which also takes chromedriver's other
    word for it: asked about an element while the next page replaces the document, chromedriver can answer "Node
    with given id does not belong to the document" instead of a stale element reference)."""
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException

    try:
        element.is_enabled()
    except StaleElementReferenceException:
        return True
    except WebDriverException as exc:
        if "does not belong to the document" in str(exc.msg):
            return True
        raise
    return False
